// The lite-agent viewer: follows a session's stream and sends what the
// user does to the JSON API. Requests carry the HttpOnly cookie the
// one-time link set; nothing here ever sees the token. Untrusted text goes
// into the page through textContent only; HTML comes from the server's
// templates.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(url, opts);
  let data = null;
  try { data = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) throw new Error((data && data.error) || (r.status + ' ' + r.statusText));
  return data;
}

function say(text, bad) {
  const s = $('#status');
  if (!s) return;
  s.textContent = text;
  s.className = bad ? 'bad' : '';
}

function listPage() {
  const form = $('#new-form');
  if (!form) return;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const prompt = $('#new-prompt').value.trim();
    if (!prompt) return;
    try {
      const d = await api('POST', '/api/sessions', { prompt });
      location.href = '/s/' + encodeURIComponent(d.session);
    } catch (err) { say(err.message, true); }
  });
}

function sessionPage() {
  const main = $('#session');
  if (!main) return;
  const id = main.dataset.session;
  const base = '/api/sessions/' + encodeURIComponent(id);
  const streaming = $('#streaming');
  const pending = $('#pending');
  let refreshing = null;

  const refresh = () => {
    if (refreshing) return;
    refreshing = setTimeout(async () => {
      refreshing = null;
      const r = await fetch('/s/' + encodeURIComponent(id) + '/timeline');
      if (r.ok) {
        const open = [...document.querySelectorAll('#timeline details[open]')].map((d) => d.id);
        $('#timeline').innerHTML = await r.text();
        for (const o of open) { const d = document.getElementById(o); if (d) d.open = true; }
      }
    }, 60);
  };

  const setRunning = (on) => {
    $('#cancel').hidden = !on;
    $('#state').textContent = on ? 'running' : $('#state').textContent === 'running' ? 'idle' : $('#state').textContent;
    $('#state').className = 'badge ' + (on ? 'running' : 'completed');
  };
  if (main.dataset.running === 'true') setRunning(true);

  const addApproval = (a) => {
    if (document.getElementById('ap-' + a.call_id)) return;
    const card = el('div', { class: 'card approval', id: 'ap-' + a.call_id });
    card.append(el('h3', {}, a.tool + ' wants to run' + (a.paths && a.paths.length ? ': ' + a.paths.join(', ') : '')));
    if (a.diff) card.append(el('pre', { class: 'diff' }, a.diff));
    else card.append(el('pre', { class: 'input' }, JSON.stringify(a.input, null, 2)));
    const buttons = el('div', { class: 'buttons' });
    for (const [decision, label] of [['once', 'Allow once'], ['session', 'Allow ' + a.tool + ' for this session'], ['deny', 'Deny']]) {
      const b = el('button', { type: 'button', 'data-decision': decision }, label);
      b.addEventListener('click', async () => {
        try {
          await api('POST', base + '/approvals/' + encodeURIComponent(a.call_id), { decision });
          card.remove();
          say(decision === 'deny' ? 'Denied.' : 'Allowed.');
        } catch (err) { say(err.message, true); }
      });
      buttons.append(b);
    }
    card.append(buttons);
    pending.append(card);
  };

  const addQuestion = (q) => {
    if (document.getElementById('q-' + q.call_id)) return;
    const card = el('form', { class: 'card question', id: 'q-' + q.call_id });
    const input = el('input', { type: 'text', 'aria-label': 'Answer', list: 'q-choices-' + q.call_id });
    const choices = el('datalist', { id: 'q-choices-' + q.call_id });
    for (const c of q.choices || []) choices.append(el('option', { value: c }));
    card.append(el('h3', {}, q.question), input, choices, el('button', { type: 'submit' }, 'Answer'));
    card.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await api('POST', base + '/questions/' + encodeURIComponent(q.call_id), { answer: input.value });
        card.remove();
      } catch (err) { say(err.message, true); }
    });
    pending.append(card);
  };

  api('GET', base + '/pending').then((p) => {
    p.approvals.forEach(addApproval);
    p.questions.forEach(addQuestion);
  }).catch(() => {});

  const es = new EventSource(base + '/stream?after=' + encodeURIComponent(main.dataset.head));
  es.addEventListener('event', (ev) => {
    const e = JSON.parse(ev.data);
    if (e.type === 'assistant_message') { streaming.textContent = ''; streaming.hidden = true; }
    if (e.type === 'tool_started' || e.type === 'tool_finished') {
      const card = document.getElementById('ap-' + (e.data && e.data.call_id));
      if (card) card.remove();
    }
    refresh();
  });
  es.addEventListener('delta', (ev) => {
    const d = JSON.parse(ev.data);
    if (d.kind !== 'text') return;
    streaming.hidden = false;
    streaming.textContent += d.text;
  });
  es.addEventListener('approval', (ev) => addApproval(JSON.parse(ev.data)));
  es.addEventListener('question', (ev) => addQuestion(JSON.parse(ev.data)));
  es.addEventListener('turn', (ev) => {
    const t = JSON.parse(ev.data);
    setRunning(t.state === 'running');
    if (t.state === 'ended') {
      streaming.textContent = '';
      streaming.hidden = true;
      pending.replaceChildren();
      say(t.error ? 'The turn ended: ' + t.error : 'The turn ended.', !!t.error);
      refresh();
    }
  });
  es.addEventListener('reset', () => location.reload());
  es.addEventListener('resync', refresh);
  es.addEventListener('shutdown', () => { say('The server is shutting down.', true); es.close(); });

  $('#prompt-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const box = $('#prompt');
    const prompt = box.value.trim();
    if (!prompt) return;
    try {
      await api('POST', base + '/prompts', { prompt });
      box.value = '';
      setRunning(true);
      say('Running…');
    } catch (err) { say(err.message, true); }
  });
  $('#cancel').addEventListener('click', async () => {
    try { await api('POST', base + '/cancel'); say('Cancelled.'); } catch (err) { say(err.message, true); }
  });
  const ack = $('#ack');
  if (ack) {
    ack.addEventListener('click', async () => {
      try {
        await api('POST', base + '/acknowledge', { tokens: ack.dataset.tokens.split(' ') });
        location.reload();
      } catch (err) { say(err.message, true); }
    });
  }

  const dialog = $('#rewind-dialog');
  let rewindTo = null;
  document.addEventListener('click', async (ev) => {
    const t = ev.target;
    if (!(t instanceof HTMLElement)) return;
    if (t.dataset.fork !== undefined) {
      try {
        const d = await api('POST', base + '/fork', { seq: Number(t.dataset.fork) });
        location.href = '/s/' + encodeURIComponent(d.session);
      } catch (err) { say(err.message, true); }
    }
    if (t.dataset.rewind !== undefined) {
      rewindTo = Number(t.dataset.rewind);
      try {
        const d = await api('POST', base + '/rewind', { seq: rewindTo, preview: true });
        const r = d.result;
        $('#rewind-what').textContent = 'Back to before “' + t.dataset.prompt + '”: this prompt and everything after it leave the log.';
        const box = $('#rewind-preview');
        box.replaceChildren();
        const files = el('ul', { class: 'files' });
        for (const f of r.files || []) files.append(el('li', {}, (f.action === 'remove' ? 'remove ' : 'put back ') + f.path));
        box.append(el('h3', {}, (r.files || []).length ? 'Files' : 'No files to put back'), files);
        if (r.drift && r.drift.length) {
          const drift = el('ul', { class: 'drift' });
          for (const p of r.drift) drift.append(el('li', {}, p));
          box.append(el('h3', { class: 'bad' }, 'Changed since the session left them'), drift);
        }
        if (r.not_undone && r.not_undone.length) {
          const nu = el('ul', {});
          for (const c of r.not_undone) nu.append(el('li', {}, c));
          box.append(el('h3', {}, 'Not undone (commands)'), nu);
        }
        $('#rewind-force-label').hidden = !(r.drift && r.drift.length);
        $('#rewind-force').checked = false;
        dialog.showModal();
      } catch (err) { say(err.message, true); }
    }
  });
  $('#rewind-close').addEventListener('click', () => dialog.close());
  $('#rewind-confirm').addEventListener('click', async () => {
    try {
      const d = await api('POST', base + '/rewind', { seq: rewindTo, force: $('#rewind-force').checked });
      dialog.close();
      say('Rewound to seq ' + d.result.to_seq + '; undo with the session ' + d.result.undo_session + '.');
      location.reload();
    } catch (err) { say(err.message, true); }
  });
}

listPage();
sessionPage();
