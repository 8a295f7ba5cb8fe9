// The page: editors in, the wasm module's JSON out. All parsing (YAML
// included) and every evaluation happen in olm_guard_playground_bg.wasm
// (playground/src/lib.rs); this file only moves text and shows answers.
// olm_guard_playground.js is wasm-bindgen's glue for the module's two
// exports, strings in and out: it copies them across and frees its buffers.
import init, { rules as listRules, evaluate } from './olm_guard_playground.js';

// The inputs, by element id; the same keys as the wasm module's Input
// (playground/src/input.rs) and as the share link's JSON.
const FIELDS = ['object', 'oldObject', 'operation', 'namespace', 'user', 'groups',
  'settings', 'cluster', 'request'];
const DEBOUNCE_MS = 250;

const $ = (id) => document.getElementById(id);
let RULES = [];
let timer = null;
let evaluations = 0;

function ruleNamed(name) {
  return RULES.find((r) => r.name === name);
}

function inputs() {
  const input = { rule: $('rule').value };
  for (const f of FIELDS) input[f] = $(f).value;
  return input;
}

function setInputs(input) {
  if (input.rule && ruleNamed(input.rule)) {
    $('rule').value = input.rule;
    showRule();
  }
  for (const f of FIELDS) $(f).value = typeof input[f] === 'string' ? input[f] : '';
  $('request').closest('details').open = $('request').value.trim() !== '';
}

function showRule() {
  const rule = ruleNamed($('rule').value);
  if (!rule) return;
  $('rule-description').textContent = rule.description;
  $('readme').textContent = rule.readme;
  $('settings').placeholder = 'defaults:\n' + JSON.stringify(rule.settings, null, 2);
  const examples = $('example');
  examples.replaceChildren(new Option('(choose an example from testdata/)', ''));
  rule.examples.forEach((e, i) => {
    const verdict = e.expect.allowed === false ? 'denied' : e.expect.mutated ? 'mutated' : 'allowed';
    examples.add(new Option(`${e.name} (${verdict})`, String(i)));
  });
}

function loadExample(index) {
  const rule = ruleNamed($('rule').value);
  const example = rule && rule.examples[index];
  if (!example) return;
  setInputs({ ...example, rule: rule.name, request: '' });
  $('example').value = String(index);
  run();
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(run, DEBOUNCE_MS);
}

function run() {
  clearTimeout(timer);
  let answer;
  try {
    answer = JSON.parse(evaluate(JSON.stringify(inputs())));
  } catch (e) {
    answer = { ok: false, error: { field: '', message: String(e) } };
  }
  show(answer);
  evaluations += 1;
  document.body.dataset.evaluations = String(evaluations);
}

function show(answer) {
  for (const f of FIELDS) $(f).classList.remove('invalid');
  const verdict = $('verdict');
  const error = $('error');
  if (!answer.ok) {
    verdict.className = 'verdict';
    verdict.textContent = 'not evaluated';
    const field = answer.error.field;
    error.hidden = false;
    error.textContent = (field ? `${field}: ` : '') + answer.error.message;
    if (field && $(field)) $(field).classList.add('invalid');
    for (const id of ['subject', 'message', 'code', 'review', 'evaluated-request']) $(id).textContent = '';
    $('warnings').replaceChildren();
    $('diff').replaceChildren();
    $('calls').replaceChildren();
    return;
  }
  error.hidden = true;
  error.textContent = '';
  const mutated = answer.patch.length > 0;
  verdict.className = 'verdict ' + (answer.allowed ? 'allowed' : 'denied');
  verdict.textContent = answer.allowed
    ? (mutated ? `allowed, mutated (${answer.patch.length} patch operation${answer.patch.length === 1 ? '' : 's'})` : 'allowed')
    : 'DENIED';
  verdict.dataset.allowed = String(answer.allowed);
  $('subject').textContent = answer.subject;
  $('message').textContent = answer.message ?? '';
  $('code').textContent = answer.code ?? '';
  $('warnings').replaceChildren(...answer.warnings.map((w) => {
    const li = document.createElement('li');
    li.textContent = w;
    return li;
  }));
  showDiff(answer.diff);
  showCalls(answer.hostCalls);
  $('review').textContent = JSON.stringify(answer.review, null, 2);
  $('evaluated-request').textContent = JSON.stringify(answer.request, null, 2);
}

function showDiff(diff) {
  const pre = $('diff');
  if (!diff) {
    pre.replaceChildren(document.createTextNode('(no mutation)'));
    return;
  }
  pre.replaceChildren(...diff.split('\n').filter((l) => l !== '').map((line) => {
    const span = document.createElement('span');
    span.textContent = line + '\n';
    if (line.startsWith('@@')) span.className = 'hunk';
    else if (line.startsWith('+') && !line.startsWith('+++')) span.className = 'add';
    else if (line.startsWith('-') && !line.startsWith('---')) span.className = 'del';
    return span;
  }));
}

function showCalls(calls) {
  const list = $('calls');
  if (calls.length === 0) {
    list.replaceChildren(document.createTextNode('(the rule made no host call)'));
    return;
  }
  list.replaceChildren(...calls.map((call) => {
    const li = document.createElement('li');
    const details = document.createElement('details');
    const summary = document.createElement('summary');
    const target = [call.request.kind, call.request.name, call.request.namespace].filter(Boolean).join(' ');
    summary.textContent = `${call.capability} ${target} → ${call.error ? 'error: ' + call.error : 'answered'}`;
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify({ request: call.request, answer: call.answer, error: call.error }, null, 2);
    details.append(summary, pre);
    li.append(details);
    return li;
  }));
}

// Share links: the inputs as JSON, UTF-8, base64url, in the fragment (never
// sent to a server).
function encodeShare(input) {
  const bytes = new TextEncoder().encode(JSON.stringify(input));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function decodeShare(fragment) {
  const base64 = fragment.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const input = JSON.parse(new TextDecoder().decode(bytes));
  if (typeof input !== 'object' || input === null) throw new Error('not an object');
  return input;
}

function share() {
  const url = new URL(window.location.href);
  url.hash = encodeShare(inputs());
  history.replaceState(null, '', url);
  $('share-link').value = url.toString();
  $('share-link').select();
  if (navigator.clipboard) navigator.clipboard.writeText(url.toString()).catch(() => {});
}

function restoreFromFragment() {
  const fragment = window.location.hash.slice(1);
  if (!fragment) return false;
  try {
    setInputs(decodeShare(fragment));
    $('example').value = '';
    return true;
  } catch (e) {
    $('error').hidden = false;
    $('error').textContent = `the share link could not be read (${e.message}); showing an example instead`;
    return false;
  }
}

async function main() {
  await init();
  RULES = JSON.parse(listRules());
  for (const rule of RULES) $('rule').add(new Option(rule.name, rule.name));
  showRule();
  $('rule').addEventListener('change', () => { showRule(); loadExample(0); });
  $('example').addEventListener('change', () => {
    if ($('example').value !== '') loadExample(Number($('example').value));
  });
  for (const f of FIELDS) {
    $(f).addEventListener('input', schedule);
    $(f).addEventListener('change', schedule);
    // Edited inputs are no longer the example the picker names: it goes back
    // to its prompt (only a user's edit fires these; setInputs does not).
    $(f).addEventListener('input', () => { $('example').value = ''; });
  }
  $('share').addEventListener('click', share);
  window.addEventListener('hashchange', () => { if (restoreFromFragment()) run(); });
  if (restoreFromFragment()) run();
  else loadExample(0);
  document.body.dataset.state = 'ready';
}

main().catch((e) => {
  document.body.dataset.state = 'failed';
  $('error').hidden = false;
  $('error').textContent = `the playground could not start: ${e}`;
});
