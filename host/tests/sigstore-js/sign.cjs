// The independent signer: a new P-256 key (its public half written to
// PUB_OUT), a DSSE bundle built by sigstore-js (@sigstore/sign
// DSSEBundleBuilder, no log, no timestamp) over the statement cosign v3
// signs for an image, attached to the image as an OCI referrer by
// @sigstore/oci (attachArtifactToImage, which writes the referrers tag
// schema index where the registry has no referrers API).
//
//   node sign.cjs HOST REPO sha256:HEX PUB_OUT [key=value ...]
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const { DSSEBundleBuilder } = require('@sigstore/sign');
const { bundleToJSON } = require('@sigstore/bundle');
const { attachArtifactToImage } = require('@sigstore/oci');
const { BUNDLE_MEDIA_TYPE, IN_TOTO, SIGN_PREDICATE, hint, annotations } = require('./common.cjs');

async function main() {
  const [host, repo, digest, pubOut, ...rest] = process.argv.slice(2);
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  fs.writeFileSync(pubOut, pem);
  const [alg, hex] = digest.split(':');
  const statement = {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ digest: { [alg]: hex }, annotations: annotations(rest) }],
    predicateType: SIGN_PREDICATE,
    predicate: {},
  };
  const signer = {
    sign: async (data) => ({
      signature: crypto.sign('sha256', data, privateKey),
      key: { $case: 'publicKey', publicKey: pem, hint: hint(publicKey) },
    }),
  };
  const bundle = await new DSSEBundleBuilder({ signer, witnesses: [] }).create({
    data: Buffer.from(JSON.stringify(statement)),
    type: IN_TOTO,
  });
  const json = JSON.stringify(bundleToJSON(bundle));
  const descriptor = await attachArtifactToImage({
    imageName: `${host}/${repo}`,
    imageDigest: digest,
    artifact: Buffer.from(json),
    mediaType: BUNDLE_MEDIA_TYPE,
    annotations: { 'dev.sigstore.bundle.content': 'dsse-envelope', 'dev.sigstore.bundle.predicateType': SIGN_PREDICATE },
    credentials: undefined,
  });
  process.stdout.write(`${JSON.stringify({ referrer: descriptor.digest, mediaType: bundle.mediaType })}\n`);
}

main().catch((e) => {
  process.stderr.write(`sigstore-js sign: ${e.message}${e.cause ? `: ${e.cause.message}` : ''}\n`);
  process.exit(2);
});
