"""A loopback SMTP server for reelfarm's tests (aiosmtpd, Debian's python3-aiosmtpd).

Started by tests/src/smtp.rs. Listens on a free port of 127.0.0.1, prints `PORT <n>`,
then one JSON line per accepted message: {"mail_from", "rcpt_tos", "data" (base64 of the
message as received)}. Recipients whose local part starts with `reject` are refused with
550, with `busy` deferred with 451. Exits when its standard input closes (the test ended).
"""

import asyncio
import base64
import json
import os
import sys
import threading

from aiosmtpd.smtp import SMTP


class Recorder:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@", 1)[0].lower()
        if local.startswith("reject"):
            return "550 5.1.1 <%s>: recipient address rejected" % address
        if local.startswith("busy"):
            return "451 4.3.0 <%s>: mailbox busy, try again later" % address
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        line = json.dumps({
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data": base64.b64encode(envelope.original_content).decode("ascii"),
        })
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return "250 2.0.0 OK: queued"


def exit_when_orphaned():
    sys.stdin.read()
    os._exit(0)


async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(Recorder(), hostname="smtp.test"), "127.0.0.1", 0)
    print("PORT %d" % server.sockets[0].getsockname()[1], flush=True)
    threading.Thread(target=exit_when_orphaned, daemon=True).start()
    await server.serve_forever()


asyncio.run(main())
