// Live countdowns to an incident's 30-minute deadline: <span class="countdown" data-deadline="ISO">.
// The server renders the same text; this only keeps it ticking between page loads.
(function () {
  function pad(n) { return String(n).padStart(2, "0"); }
  // "4:05" within the hour; then "2 h 30 min", then "6 d 10 h" (as the rule preview says it).
  function span(seconds) {
    if (seconds < 3600) return Math.floor(seconds / 60) + ":" + pad(seconds % 60);
    var hours = Math.floor(seconds / 3600);
    if (hours < 24) return hours + " h " + Math.floor((seconds % 3600) / 60) + " min";
    return Math.floor(hours / 24) + " d " + (hours % 24) + " h";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Math.round((Date.parse(el.dataset.deadline) - now) / 1000);
      // Only the countdown itself turns red; its row gets a quiet marker, never red text.
      var row = el.closest("tr, li");
      if (left <= 0) {
        var over = -left;
        el.textContent = "overdue by " + span(over);
        el.classList.add("overdue");
        if (row) row.classList.add("is-overdue");
      } else {
        el.textContent = span(left) + " left";
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { tick(); setInterval(tick, 1000); });
})();

// Confirmation before every irreversible step: <form data-confirm="What will happen?">.
// Without JavaScript the form submits as it is (the services still check everything).
// A double click submits twice: the second submit of a form already on its way asks nothing and
// sends nothing (the first one's answer stands).
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute && form.getAttribute("data-confirm");
  if (!question) return;
  // <form data-confirm="..." data-confirm-if="input[name=incidents]:checked">: asked only when
  // something is chosen. With nothing ticked there is nothing to confirm; the server says so.
  var needs = form.getAttribute("data-confirm-if");
  if (needs && !form.querySelector(needs)) return;
  if (form.dataset.sending === "1") {
    event.preventDefault();
    event.stopImmediatePropagation();
    return;
  }
  if (!window.confirm(question)) {
    event.preventDefault();
    event.stopImmediatePropagation();
    return;
  }
  form.dataset.sending = "1";
}, true);
// Back to a page from the browser's cache: its forms may be sent again.
window.addEventListener("pageshow", function () {
  document.querySelectorAll("form[data-sending]").forEach(function (form) { delete form.dataset.sending; });
});

// A player's statement opens right under the row that was clicked; only one at a time.
document.addEventListener("htmx:beforeRequest", function (event) {
  if (event.target.classList && event.target.classList.contains("statement-link")) {
    document.querySelectorAll("tr.statement-row").forEach(function (row) { row.remove(); });
  }
});

// Print buttons (<button data-print>): the statement page prints itself without inline script.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-print]");
  if (button) { event.preventDefault(); window.print(); }
});

// <select data-autosubmit> submits its form when changed (the time zone switch). Here rather than
// in an onchange="" attribute: the Content-Security-Policy allows no inline script.
document.addEventListener("change", function (event) {
  var el = event.target;
  if (el.matches && el.matches("select[data-autosubmit]") && el.form) el.form.submit();
});

// An htmx request the server refused or failed (an expired form after signing in again in
// another tab, a role that does not allow it, a server error) swaps nothing: without this the
// click seemed to do nothing at all. Say so at the top of the page, where messages appear.
function showRequestProblem(text) {
  var main = document.getElementById("main");
  if (!main) return;
  var box = document.getElementById("request-problem");
  if (!box) {
    box = document.createElement("p");
    box.id = "request-problem";
    box.className = "message error";
    box.setAttribute("role", "alert");
    main.insertBefore(box, main.firstChild);
  }
  box.textContent = text;
  box.scrollIntoView({ block: "nearest" });
}
document.addEventListener("htmx:responseError", function (event) {
  var status = event.detail.xhr ? event.detail.xhr.status : 0;
  showRequestProblem(status === 403
    ? "Not done: the form expired (for instance after signing in again in another tab) or your role does not allow it. Reload the page and try again."
    : "Not done: the server answered with an error (" + status + "). Reload the page and try again.");
});
document.addEventListener("htmx:sendError", function () {
  showRequestProblem("Not done: the server could not be reached. Check the connection and try again.");
});

// A form sent back with an error: the focus goes to the first field in error, so that its label
// and its error (aria-describedby) are what a screen reader reads next and the keyboard is
// where the fix is typed. Only on a page load, never after an htmx swap; autofocus wins.
document.addEventListener("DOMContentLoaded", function () {
  var field = document.querySelector("main [aria-invalid='true']");
  if (field && document.activeElement === document.body) field.focus();
});
