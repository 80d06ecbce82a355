// The live build view: follow the build's server-sent events and append them to the page.
(function () {
  "use strict";
  var script = document.currentScript;
  var log = document.getElementById("log");
  var stages = document.getElementById("stages");
  var status = document.getElementById("status");
  var source = new EventSource(script.getAttribute("data-events"));
  source.addEventListener("line", function (event) {
    log.appendChild(document.createTextNode(event.data + "\n"));
    log.scrollTop = log.scrollHeight;
  });
  source.addEventListener("stages", function (event) {
    var list = JSON.parse(event.data);
    stages.textContent = "";
    list.forEach(function (stage) {
      var item = document.createElement("li");
      item.className = stage.seconds === null ? "running" : "done";
      item.textContent = stage.name + (stage.seconds === null ? "" : " " + stage.seconds.toFixed(1) + " s");
      stages.appendChild(item);
    });
  });
  source.addEventListener("end", function (event) {
    source.close();
    var code = parseInt(event.data, 10);
    status.textContent = code === 0 ? "Finished" : "Failed (exit code " + code + ")";
    status.setAttribute("data-running", "no");
    status.setAttribute("data-exit", String(code));
    var button = document.querySelector("form button");
    if (button) { button.disabled = false; }
  });
})();
