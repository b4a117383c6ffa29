// Opening a link to an archived original (from search, or from its summary) opens the
// summaries that hold it, so the browser can scroll to it. No inline script: CSP-friendly.
(function () {
  function reveal() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.classList.add("targeted");
    target.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", reveal);
})();

// After "Compress now": ask for the events newer than the last one before it, every two
// seconds for up to five minutes; when the compression's event lands, say so and show the page
// again without the follow marker, which lists it.
(function () {
  function follow() {
    var box = document.getElementById("follow");
    if (!box) return;
    var tries = 0;
    function ask() {
      tries += 1;
      fetch(box.dataset.events, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : { events: [] }; })
        .then(function (body) {
          if (body.events && body.events.length) {
            var last = body.events[body.events.length - 1];
            box.textContent = "Compression " + last.outcome + ": " + last.reason +
              (last.fell_back_because
                ? ". A local summary was written instead of the model's, because: " +
                  last.fell_back_because + "."
                : "") + " Showing it…";
            window.location.replace(box.dataset.page + "?landed=" + last.id);
          } else if (tries < 150) {
            window.setTimeout(ask, 2000);
          } else {
            box.textContent = "The compression has not finished after five minutes; reload to check.";
          }
        })
        .catch(function () { if (tries < 150) window.setTimeout(ask, 2000); });
    }
    ask();
  }
  document.addEventListener("DOMContentLoaded", follow);
})();
