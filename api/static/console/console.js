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
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    for (const file of event.dataTransfer.files) uploadFile(zone, file);
  });
});

// Studio: the frame at the playhead, asked for while scrubbing (debounced). Setting the
// image's address cancels the load of the one before, so the newest frame wins; `data-t`
// says which time the shown frame is of.
document.querySelectorAll("[data-studio]").forEach((studio) => {
  const range = studio.querySelector("#playhead");
  const frame = studio.querySelector("#frame");
  const time = studio.querySelector("#playhead-time");
  let timer;
  frame.addEventListener("load", () => { frame.dataset.t = frame.dataset.asked || "0"; });
  range.addEventListener("input", () => {
    time.textContent = Number(range.value).toFixed(2) + " s";
    clearTimeout(timer);
    timer = setTimeout(() => {
      frame.dataset.asked = range.value;
      frame.src = studio.dataset.frames + "?t=" + encodeURIComponent(range.value);
    }, 60);
  });
});
