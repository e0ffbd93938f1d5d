// Live countdowns to an incident's 30-minute deadline: <span class="countdown" data-deadline="ISO">.
// The server renders the same text; this only keeps it ticking between page loads.
(function () {
  function pad(n) { return String(n).padStart(2, "0"); }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Math.round((Date.parse(el.dataset.deadline) - now) / 1000);
      var row = el.closest("tr, li, .card");
      if (left <= 0) {
        var over = -left;
        el.textContent = "overdue by " + Math.floor(over / 60) + ":" + pad(over % 60);
        el.classList.add("overdue");
        if (row) row.classList.add("overdue");
      } else {
        el.textContent = Math.floor(left / 60) + ":" + pad(left % 60) + " left";
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { tick(); setInterval(tick, 1000); });
})();

// <select data-autosubmit> submits its form when changed (the time zone switch). Here rather than
// in an onchange="" attribute: the Content-Security-Policy allows no inline script.
document.addEventListener("change", function (event) {
  var el = event.target;
  if (el.matches && el.matches("select[data-autosubmit]") && el.form) el.form.submit();
});
