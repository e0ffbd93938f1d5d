// Outage form: "select all" ticks every tournament shown (after a search, only the matches),
// and the count of chosen tournaments follows. The list itself is rendered by the server (htmx).
(function () {
  function boxes() { return Array.prototype.slice.call(document.querySelectorAll("input.candidate")); }
  function update() {
    var count = document.getElementById("chosen-count");
    var all = document.getElementById("select-all");
    var shown = boxes();
    var chosen = shown.filter(function (b) { return b.checked; }).length;
    if (count) count.textContent = String(chosen);
    if (all) {
      all.checked = shown.length > 0 && chosen === shown.length;
      all.indeterminate = chosen > 0 && chosen < shown.length;
    }
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.id === "select-all") {
      boxes().forEach(function (b) { b.checked = target.checked; });
      update();
    } else if (target.classList && (target.classList.contains("candidate") || target.classList.contains("row-pick"))) {
      update();
    }
  });
  // Review page: "select all" for the proposals to review as a selection.
  document.addEventListener("change", function (event) {
    if (event.target.id === "pick-all") {
      document.querySelectorAll("input.row-pick").forEach(function (b) { b.checked = event.target.checked; });
    }
  });
  document.addEventListener("DOMContentLoaded", update);
  document.addEventListener("htmx:afterSwap", update);
})();
