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
