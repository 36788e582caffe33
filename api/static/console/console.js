// reelfarm console: the little the pages need beyond htmx. No inline scripts (the
// Content-Security-Policy forbids them): behaviour hangs off data- attributes.
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});

// Uploads: each chosen or dropped file is recorded (POST, with the session's CSRF token),
// then PUT straight to its signed upload address with a progress bar; its tile then
// follows the conversion (htmx polls it until it is finished or failed).
function uploadFile(zone, file) {
  const item = document.createElement("li");
  const name = document.createElement("span");
  name.textContent = file.name;
  const bar = document.createElement("progress");
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute("aria-label", "Uploading " + file.name);
  item.append(name, bar);
  document.getElementById("uploads").append(item);

  const recorded = fetch("/console/libraries/" + zone.dataset.library + "/objects", {
    method: "POST",
    headers: { "x-csrf-token": zone.dataset.csrf },
    body: new URLSearchParams({ filename: file.name }),
  }).then((response) =>
    response.json().catch(() => ({ message: "the session has ended; sign in again" })).then((body) => {
      if (!response.ok || !body.upload_url) throw new Error(body.message || "the object was not recorded");
      return body;
    }),
  );
  recorded
    .then((created) => new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open("PUT", created.upload_url);
      request.setRequestHeader("content-type", file.type || "application/octet-stream");
      request.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) bar.value = Math.round((100 * event.loaded) / event.total);
      });
      request.addEventListener("load", () => {
        if (request.status < 300) return resolve(created);
        let message = "the upload was refused (" + request.status + ")";
        try { message = JSON.parse(request.responseText).message || message; } catch (_) { /* not JSON */ }
        reject(new Error(message));
      });
      request.addEventListener("error", () => reject(new Error("the upload was interrupted")));
      request.send(file);
    }))
    .then((created) => {
      item.remove();
      const empty = document.getElementById("empty");
      if (empty) empty.remove();
      const tile = document.createElement("li");
      tile.className = "tile";
      tile.setAttribute("hx-get", "/console/objects/" + created.id + "/tile");
      tile.setAttribute("hx-trigger", "load");
      tile.setAttribute("hx-swap", "outerHTML");
      document.getElementById("assets").prepend(tile);
      htmx.process(tile);
    })
    .catch((error) => {
      item.classList.add("failed");
      bar.remove();
      name.textContent = file.name + ": " + error.message;
    });
}

document.addEventListener("DOMContentLoaded", () => {
  const zone = document.getElementById("drop");
  if (!zone) return;
  const input = document.getElementById("files");
  input.addEventListener("change", () => {
    for (const file of input.files) uploadFile(zone, file);
    input.value = "";
  });
  dropZone(zone, (files) => {
    for (const file of files) uploadFile(zone, file);
  });
});

// Files dropped on `zone` go to `take`; the zone is marked while they are dragged over it.
function dropZone(zone, take) {
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    take(event.dataTransfer.files);
  });
}

// Spreadsheets: a CSV file chosen or dropped on a template page is read into the form's
// text (which can also be pasted) and its first rows are asked for at once.
document.addEventListener("DOMContentLoaded", () => {
  const zone = document.querySelector("[data-csv-zone]");
  if (!zone) return;
  const form = zone.closest("form");
  const text = form.querySelector("[data-csv-text]");
  const show = (file) =>
    file.text().then((content) => {
      text.value = content;
      form.requestSubmit(form.querySelector("[data-csv-preview]"));
    });
  const input = zone.querySelector("[data-csv-file]");
  input.addEventListener("change", () => {
    if (input.files.length) show(input.files[0]);
  });
  dropZone(zone, (files) => {
    if (files.length) show(files[0]);
  });
});

// Studio. Edits are htmx requests (the studio's hx-* attributes): one after the other
// (`hx-sync` queues them), each naming the selection and the revision of the working copy
// when it is sent (`hx-include`), each answer morphed into #editor, so the focused field
// keeps its focus and what is typed in it. What is left here: the frame at the playhead,
// an <img> whose address names the time, the revision and its stamp (setting it cancels
// the load of the one before, so the newest frame wins; `data-t` says which time the shown
// frame is of); the timeline (drag a layer's bar to move it, its grips to trim it, a
// clip's grip to change its duration; a click, Enter or Space selects); Ctrl+Z and
// Ctrl+Shift+Z for undo and redo.
if (window.Idiomorph) {
  Idiomorph.defaults.ignoreActiveValue = true;
  // An open <details> stays open, and the timeline keeps its places until `place` runs.
  Idiomorph.defaults.callbacks.beforeAttributeUpdated = (name, node, mutation) =>
    !(mutation === "remove" && (name === "style" || (name === "open" && node.tagName === "DETAILS")));
}
document.querySelectorAll("[data-studio]").forEach((studio) => {
  const range = studio.querySelector("#playhead");
  const frame = studio.querySelector("#frame");
  const time = studio.querySelector("#playhead-time");
  const problem = studio.querySelector("#frame-problem");
  const failure = studio.querySelector("#studio-error");
  const editor = () => studio.querySelector("#editor");
  let timer;
  let retry;
  let retries = 0;
  let shown = frame.getAttribute("src");

  const showFrame = () => {
    const e = editor();
    const address = studio.dataset.frames + "?t=" + encodeURIComponent(range.value) +
      "&rev=" + e.dataset.rev + "&v=" + e.dataset.stamp;
    if (address === shown) return;
    if (address !== frame.dataset.failed) retries = 0;
    shown = address;
    frame.dataset.asked = range.value;
    frame.src = address;
  };
  // Timeline items are placed by their data-left/data-width (percent of the video): the
  // console's Content-Security-Policy refuses inline styles.
  const place = () => {
    studio.querySelectorAll("[data-left]").forEach((e) => { e.style.left = e.dataset.left + "%"; });
    studio.querySelectorAll("[data-width]").forEach((e) => { e.style.width = e.dataset.width + "%"; });
  };
  const placeCursor = () => {
    const cursor = studio.querySelector("#cursor");
    const duration = Number(editor().dataset.duration) || 1;
    if (cursor) cursor.style.left = (100 * Number(range.value) / duration) + "%";
  };
  frame.addEventListener("load", () => {
    frame.dataset.t = frame.dataset.asked || "0";
    problem.hidden = true;
    frame.classList.remove("stale");
  });
  // A frame refused (the document has problems) or not drawn (too many asked for at
  // once): said so, and asked for again a few times.
  frame.addEventListener("error", () => {
    problem.hidden = false;
    frame.classList.add("stale");
    frame.dataset.failed = shown;
    shown = "";
    clearTimeout(retry);
    if (retries++ < 3) retry = setTimeout(showFrame, 1000);
  });
  range.addEventListener("input", () => {
    time.textContent = Number(range.value).toFixed(2) + " s";
    placeCursor();
    clearTimeout(timer);
    timer = setTimeout(showFrame, 60);
  });

  studio.addEventListener("htmx:afterSwap", () => {
    failure.hidden = true;
    const e = editor();
    range.max = e.dataset.duration;
    range.step = e.dataset.step;
    if (Number(range.value) > Number(range.max)) range.value = range.max;
    place();
    placeCursor();
    showFrame();
  });
  const fail = (message) => {
    failure.textContent = message;
    failure.hidden = false;
  };
  studio.addEventListener("htmx:sendError", () =>
    fail("The change was not sent: the server does not answer. Check the connection and try again."));
  studio.addEventListener("htmx:responseError", (event) => {
    const status = event.detail.xhr.status;
    fail(status === 403 || status === 401
      ? "The change was not made: the session has ended. Sign in again (your earlier changes are kept)."
      : "The change was not made (" + status + "): it was refused, e.g. a document over 64 KiB.");
  });
  const send = (item, values) => htmx.ajax("POST", studio.dataset.edit, { source: item, values });

  const select = (item) => send(item, {
    op: "select", select: item.dataset.clip !== undefined ? "clip:" + item.dataset.clip : "layer:" + item.dataset.layer,
  });
  const seekTo = (event) => {
    const ruler = studio.querySelector("#ruler").getBoundingClientRect();
    const duration = Number(editor().dataset.duration) || 0;
    const at = Math.min(Math.max((event.clientX - ruler.left) / ruler.width, 0), 1) * duration;
    const step = Number(editor().dataset.step) || 0.04;
    range.value = String(Math.round(at / step) * step);
    range.dispatchEvent(new Event("input"));
  };
  // Dragging on the timeline: seconds per pixel from the ruler's width.
  studio.addEventListener("pointerdown", (event) => {
    if (event.target.closest("#ruler")) return seekTo(event);
    const item = event.target.closest(".bar, .clip");
    if (!item || event.button !== 0) return;
    event.preventDefault();
    const e = editor();
    const perPixel = (Number(e.dataset.duration) || 1) / studio.querySelector("#ruler").getBoundingClientRect().width;
    const step = Number(e.dataset.step) || 0.04;
    const snap = (t) => Math.round(t / step) * step;
    const grip = event.target.dataset.grip || "move";
    const [x0, left0, width0, d] = [event.clientX, item.offsetLeft, item.offsetWidth, item.dataset];
    let values = null;
    item.setPointerCapture(event.pointerId);
    const move = (m) => {
      if (Math.abs(m.clientX - x0) < 3) return;
      const dt = (m.clientX - x0) * perPixel;
      if (d.clip !== undefined) {
        if (grip !== "duration") return;
        const duration = Math.max(step, snap(Number(d.duration) + dt));
        values = { op: "clip_duration", clip: d.clip, duration: duration.toFixed(3) };
        item.style.width = (width0 + (duration - Number(d.duration)) / perPixel) + "px";
        return;
      }
      const [start0, end0, clip] = [Number(d.start), Number(d.end), Number(d.clipDuration)];
      let [start, end] = [start0, end0];
      if (grip === "start") start = Math.min(Math.max(0, snap(start0 + dt)), end0 - step);
      else if (grip === "end") end = Math.max(Math.min(clip, snap(end0 + dt)), start0 + step);
      else {
        start = Math.min(Math.max(0, snap(start0 + dt)), clip - (end0 - start0));
        end = start + (end0 - start0);
      }
      values = { op: "time", layer: d.layer, start: start.toFixed(3), end: end.toFixed(3) };
      item.style.left = (left0 + (start - start0) / perPixel) + "px";
      item.style.width = (width0 + (end - end0 - (start - start0)) / perPixel) + "px";
    };
    const stop = (cancelled) => {
      item.removeEventListener("pointermove", move);
      item.removeEventListener("pointerup", up);
      item.removeEventListener("pointercancel", cancel);
      if (cancelled) place();
      else if (values) send(item, values);
      else select(item);
    };
    const up = () => stop(false);
    const cancel = () => stop(true);
    item.addEventListener("pointermove", move);
    item.addEventListener("pointerup", up);
    item.addEventListener("pointercancel", cancel);
  });
  studio.addEventListener("keydown", (event) => {
    const item = event.target.closest(".bar, .clip");
    if (item && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      select(item);
    }
  });
  document.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== "z") return;
    if (event.target.closest("input, textarea, select")) return;
    const button = studio.querySelector(event.shiftKey ? "#redo" : "#undo");
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  });
  place();
});
