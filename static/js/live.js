// Live data for a page: the run websockets (/ws/runs/, /ws/runs/<id>/) with automatic reconnect,
// and a polling fallback while the socket is down that pauses while the tab is hidden.
//
//   const live = TirlabLive.connect("/ws/runs/7/", {
//     onEvent(event) { ... },             // every websocket message, parsed ({event, run_id, data})
//     poll() { return fetch(...)... },    // called every pollMs while the socket is not open
//     pollMs: 3000,
//     onState(state) { ... },             // "live" | "polling" | "paused"
//   });
//   live.close();
//
//   const redraw = TirlabLive.batch(fn, 250);  // calls fn at most every 250 ms, with the items queued
//   redraw(item);
(function () {
  function wsUrl(path) {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return proto + "//" + location.host + path;
  }

  function connect(path, options) {
    const opts = Object.assign({ pollMs: 3000, onEvent() {}, onState() {}, poll: null }, options || {});
    let socket = null;
    let closed = false;
    let retryMs = 500;
    let pollTimer = null;
    let state = "";

    function setState(next) {
      if (next !== state) {
        state = next;
        opts.onState(next);
      }
    }

    function schedulePoll() {
      if (pollTimer || closed || !opts.poll) return;
      pollTimer = setTimeout(async function tick() {
        pollTimer = null;
        if (closed || (socket && socket.readyState === WebSocket.OPEN)) return;
        if (document.hidden) {
          setState("paused"); // resumed by visibilitychange
          return;
        }
        setState("polling");
        try { await opts.poll(); } catch (err) { /* the next tick tries again */ }
        schedulePoll();
      }, opts.pollMs);
    }

    function open() {
      if (closed) return;
      try {
        socket = new WebSocket(wsUrl(path));
      } catch (err) {
        socket = null;
        schedulePoll();
        setTimeout(open, retryMs);
        return;
      }
      socket.onopen = function () {
        retryMs = 500;
        setState("live");
      };
      socket.onmessage = function (message) {
        let event;
        try { event = JSON.parse(message.data); } catch (err) { return; }
        opts.onEvent(event);
      };
      socket.onclose = function () {
        socket = null;
        if (closed) return;
        schedulePoll();
        setTimeout(open, retryMs);
        retryMs = Math.min(retryMs * 2, 15000);
      };
    }

    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && state === "paused") schedulePoll();
    });
    open();
    return {
      close() {
        closed = true;
        if (pollTimer) clearTimeout(pollTimer);
        if (socket) socket.close();
      },
      get state() { return state; },
    };
  }

  function batch(fn, everyMs) {
    let queued = [];
    let timer = null;
    return function (item) {
      queued.push(item);
      if (timer) return;
      timer = setTimeout(function () {
        const items = queued;
        queued = [];
        timer = null;
        fn(items);
      }, everyMs);
    };
  }

  window.TirlabLive = { connect, batch };
})();
