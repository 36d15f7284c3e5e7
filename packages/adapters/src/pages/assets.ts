/**
 * The decision pages' static files, served by this server itself (the
 * Content-Security-Policy allows nothing else): one stylesheet (plain CSS,
 * readable from 320 px phones to desktops) and the inbox's small refresh
 * script, which fetches the list again every few seconds while the page is
 * visible and swaps it in (parsed with `DOMParser`, so nothing it holds ever
 * runs), and stops, saying so, once the session has ended.
 */

/** `/pages/pages.css`. */
export const PAGES_CSS = `
:root { color-scheme: light; --ink: #1d2430; --muted: #5b6573; --line: #d8dde5; --bg: #f4f6f9; --card: #fff;
  --accent: #1f5fbf; --accent-ink: #fff; --bad: #a4262c; --good: #1e7b34; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
.bar { display: flex; align-items: center; justify-content: space-between; gap: 12px; padding: 10px 16px; background: var(--ink); color: #fff; }
.bar a.brand { color: #fff; font-weight: 700; text-decoration: none; letter-spacing: .02em; }
.who { display: flex; align-items: center; gap: 10px; margin: 0; min-width: 0; }
.who span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 45vw; }
button.link { background: none; border: 0; color: #cfe0ff; padding: 4px; font: inherit; cursor: pointer; text-decoration: underline; }
main { max-width: 760px; margin: 0 auto; padding: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px; margin: 0 0 16px; overflow-wrap: anywhere; }
h1 { font-size: 1.3rem; line-height: 1.3; margin: 0 0 12px; }
h2 { font-size: 1rem; margin: 16px 0 8px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.flow { margin: 0 0 6px; color: var(--muted); font-size: .9rem; }
code { font: .85em ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--bg); padding: 1px 4px; border-radius: 4px; }
dl { margin: 0; display: grid; grid-template-columns: 1fr; gap: 6px; }
dl div { display: grid; grid-template-columns: 1fr; }
dt { color: var(--muted); font-size: .85rem; }
dd { margin: 0; }
@media (min-width: 640px) {
  main { padding: 24px; }
  dl div { grid-template-columns: 160px 1fr; gap: 12px; }
  h1 { font-size: 1.5rem; }
}
.made ul { margin: 0; padding-left: 20px; }
form.answer { margin-top: 20px; border-top: 1px solid var(--line); padding-top: 16px; }
.field { margin: 0 0 16px; }
.label { display: block; font-weight: 600; margin-bottom: 4px; }
.req { color: var(--bad); }
.opt { color: var(--muted); font-weight: 400; font-size: .9rem; }
.hint { color: var(--muted); font-size: .9rem; margin: 4px 0; }
input[type=text], input[type=email], input[type=url], input[type=date], input[type=number], select, textarea {
  width: 100%; font: inherit; padding: 10px; border: 1px solid #aab3c0; border-radius: 8px; background: #fff; color: var(--ink); }
textarea { resize: vertical; }
.choices { display: flex; flex-wrap: wrap; gap: 8px 20px; }
.choice { display: inline-flex; align-items: center; gap: 8px; padding: 6px 0; min-height: 44px; }
.choice input { width: 20px; height: 20px; }
.actions { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 8px; }
.actions button { flex: 1 1 180px; min-height: 44px; font: inherit; font-weight: 600; border-radius: 8px; padding: 10px 16px; cursor: pointer; }
button.primary { background: var(--accent); color: var(--accent-ink); border: 1px solid var(--accent); }
button.secondary { background: #fff; color: var(--ink); border: 1px solid #aab3c0; }
.problem { border-left: 4px solid var(--bad); background: #fdf0f0; padding: 8px 12px; margin: 0 0 16px; color: var(--bad); }
.field.invalid input, .field.invalid textarea, .field.invalid select { border-color: var(--bad); }
.issue { color: var(--bad); font-size: .9rem; margin: 4px 0; }
.notice .sentence { font-size: 1.05rem; }
.notice.recorded h1 { color: var(--good); }
.notice[data-status^="4"] h1, .notice[data-status^="5"] h1 { color: var(--bad); }
ul.inbox { list-style: none; margin: 0; padding: 0; }
.item a.open { display: block; font-weight: 600; color: var(--accent); text-decoration: none; font-size: 1.05rem; }
.item a.open:hover { text-decoration: underline; }
.item .meta { margin: 6px 0 0; color: var(--muted); font-size: .9rem; }
.empty { color: var(--muted); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid #8fb5ff; outline-offset: 2px; }
`;

/** `/pages/inbox.js`: the inbox's live refresh. */
export const INBOX_JS = `'use strict';
(function () {
  var live = document.getElementById('live');
  var every = Number((live && live.getAttribute('data-poll-ms')) || 5000);
  var stopped = false;
  function refresh() {
    if (stopped || document.visibilityState === 'hidden') return;
    fetch('/inbox/list', { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'text/html' } })
      .then(function (response) {
        if (response.status === 401) {
          stopped = true;
          if (live) live.textContent = 'You are signed out: reload the page to sign in again.';
          return undefined;
        }
        return response.ok ? response.text() : undefined;
      })
      .then(function (text) {
        if (!text) return;
        var fresh = new DOMParser().parseFromString(text, 'text/html').getElementById('inbox-list');
        var old = document.getElementById('inbox-list');
        if (fresh && old) old.replaceWith(document.adoptNode(fresh));
        document.body.setAttribute('data-refreshed', String(Date.now()));
      })
      .catch(function () {});
  }
  setInterval(refresh, every);
  document.addEventListener('visibilitychange', refresh);
  document.body.setAttribute('data-live', 'true');
})();
`;
