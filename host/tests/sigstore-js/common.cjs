// Shared by verify.cjs and sign.cjs: the key hint and the statement cosign
// v3 signs for an image (sigstore/cosign cmd/cosign/cli/sign/sign.go,
// signDigestBundle), and the constants of sigstore/cosign specs/BUNDLE_SPEC.md.
'use strict';
const crypto = require('node:crypto');

exports.BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
exports.IN_TOTO = 'application/vnd.in-toto+json';
exports.SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';

// base64 SHA-256 of the key's SPKI DER, as cosign and sigstore-go write
// verificationMaterial.publicKey.hint.
exports.hint = (publicKey) =>
  crypto.createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64');

// `key=value` arguments as an object.
exports.annotations = (args) =>
  Object.fromEntries(args.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
