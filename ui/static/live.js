// berth UI: confirmations, live refresh, log following. The pages work
// without it; this only saves the reload.
"use strict";
(function () {
  // Every action asks first. Confirmed here, the form says so (confirm=yes),
  // so the server does not ask again with its confirmation page, which is
  // how it asks when scripts are off.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var msg = form.getAttribute("data-confirm");
    if (!msg) return;
    if (!window.confirm(msg)) {
      ev.preventDefault();
      return;
    }
    if (!form.querySelector('input[name="confirm"]')) {
      var yes = document.createElement("input");
      yes.type = "hidden";
      yes.name = "confirm";
      yes.value = "yes";
      form.appendChild(yes);
    }
  });

  var page = document.body.getAttribute("data-page");

  // A log page follows its stream.
  var follow = document.querySelector(".follow[data-raw]");
  if (follow) {
    var pre = document.getElementById("log");
    var tick = function () {
      fetch(follow.getAttribute("data-raw"), { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (text) {
          var atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 20;
          if (pre.textContent !== text) pre.textContent = text;
          if (atEnd) window.scrollTo(0, document.body.scrollHeight);
        })
        .catch(function () {})
        .finally(function () { setTimeout(tick, 1000); });
    };
    setTimeout(tick, 1000);
    return;
  }
  if (page === "signin" || page === "error" || page === "confirm" || page === "refused") return;

  // Other pages refresh their content every 2 seconds, unless the user is
  // typing in a form.
  var refresh = function () {
    var active = document.activeElement;
    if (active && (active.tagName === "INPUT" || active.tagName === "SELECT")) {
      setTimeout(refresh, 2000);
      return;
    }
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        if (fresh) document.getElementById("live").innerHTML = fresh.innerHTML;
        document.body.setAttribute("data-refreshed", new Date().toISOString());
      })
      .catch(function () {})
      .finally(function () { setTimeout(refresh, 2000); });
  };
  setTimeout(refresh, 2000);
})();
