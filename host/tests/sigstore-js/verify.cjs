// The independent bundle verifier: finds the Sigstore bundle referrers of an
// image on a registry with plain HTTP (the referrers API, then the
// referrers tag schema, as sigstore/cosign specs/BUNDLE_SPEC.md "Retrieval"
// says), verifies each with sigstore-js (@sigstore/bundle bundleFromJSON,
// @sigstore/verify Verifier with the given public key, no log or timestamp
// required, as `cosign verify --key` of a key-signed bundle), then checks
// the in-toto statement: cosign's signing predicate, the image digest as
// subject, the required annotations in the subject's annotations.
//
//   node verify.cjs HOST REPO sha256:HEX KEY.pub [key=value ...]
//
// Prints one JSON line {"verified": bool, "bundles": n, "reasons": [...]}
// and exits 0 when a bundle satisfies everything, 1 otherwise, 2 on a
// registry failure.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const { bundleFromJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { BUNDLE_MEDIA_TYPE, IN_TOTO, SIGN_PREDICATE, annotations } = require('./common.cjs');

const INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

async function get(url, accept) {
  const res = await fetch(url, { headers: accept ? { Accept: accept } : {} });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

async function referrers(base, digest) {
  const api = await get(`${base}/referrers/${digest}`, INDEX);
  if (api) return { via: 'referrers API', index: JSON.parse(api) };
  const tag = await get(`${base}/manifests/${digest.replace(':', '-')}`, INDEX);
  return { via: 'tag schema', index: tag ? JSON.parse(tag) : { manifests: [] } };
}

function check(json, key, digest, want, manifest) {
  let bundle;
  try {
    bundle = bundleFromJSON(JSON.parse(json.toString('utf8')));
  } catch (e) {
    return `not a bundle: ${e.message}`;
  }
  // No trusted root: a key-signed bundle needs none.
  const root = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
  const trust = toTrustMaterial(root, () => ({ publicKey: key, validFor: () => true }));
  const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
  try {
    verifier.verify(toSignedEntity(bundle, manifest));
  } catch (e) {
    return `${e.code || 'ERROR'}: ${e.message}`;
  }
  if (bundle.content.$case === 'messageSignature') {
    const names = Object.keys(want);
    return names.length ? `annotation ${names[0]}: a message signature carries no annotations` : null;
  }
  const env = bundle.content.dsseEnvelope;
  if (env.payloadType !== IN_TOTO) return `payload type ${env.payloadType}`;
  const statement = JSON.parse(env.payload.toString('utf8'));
  if (statement.predicateType !== SIGN_PREDICATE) return `predicate ${statement.predicateType}`;
  const [alg, hex] = digest.split(':');
  const subject = (statement.subject || []).find((s) => s.digest && s.digest[alg] === hex);
  if (!subject) {
    const named = (statement.subject || []).map((s) => JSON.stringify(s.digest)).join(', ');
    return `SUBJECT_MISMATCH: the statement names ${named}, not ${digest}`;
  }
  for (const [name, value] of Object.entries(want)) {
    const have = (subject.annotations || {})[name];
    if (have === undefined) return `ANNOTATION_MISSING: ${name}`;
    if (String(have) !== value) return `ANNOTATION_MISMATCH: ${name}=${have}, want ${value}`;
  }
  return null;
}

async function main() {
  const [host, repo, digest, keyFile, ...rest] = process.argv.slice(2);
  const key = crypto.createPublicKey(fs.readFileSync(keyFile));
  const want = annotations(rest);
  const base = `http://${host}/v2/${repo}`;
  const manifest = await get(`${base}/manifests/${digest}`, MANIFEST);
  const { via, index } = await referrers(base, digest);
  const reasons = [];
  let verified = false;
  let bundles = 0;
  for (const entry of index.manifests || []) {
    if (entry.artifactType && !entry.artifactType.startsWith('application/vnd.dev.sigstore.bundle')) continue;
    const referrer = JSON.parse(await get(`${base}/manifests/${entry.digest}`, MANIFEST));
    const layer = (referrer.layers || []).find((l) => l.mediaType === BUNDLE_MEDIA_TYPE);
    if (!layer) continue;
    bundles += 1;
    const blob = await get(`${base}/blobs/${layer.digest}`);
    const actual = `sha256:${crypto.createHash('sha256').update(blob).digest('hex')}`;
    if (actual !== layer.digest) {
      reasons.push(`BLOB_DIGEST_MISMATCH: ${layer.digest} holds ${actual}`);
      continue;
    }
    const reason = check(blob, key, digest, want, manifest);
    if (reason === null) verified = true;
    else reasons.push(reason);
  }
  if (bundles === 0) reasons.push('NO_BUNDLE: no bundle referrer');
  process.stdout.write(`${JSON.stringify({ verified, via, bundles, reasons })}\n`);
  process.exit(verified ? 0 : 1);
}

main().catch((e) => {
  process.stderr.write(`sigstore-js verify: ${e.message}\n`);
  process.exit(2);
});
