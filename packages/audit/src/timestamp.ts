import { createHash, randomBytes, verify, type X509Certificate } from 'node:crypto';
import { children, der, generalizedTime, oid, oidText, readDer } from './der.ts';

// Trusted time for signed checkpoints (issue 49): an RFC 3161 timestamp over a checkpoint's hash from a
// time-stamping authority (BULKHEAD_AUDIT_TSA_URL), checked with the TSA's certificate alone.

const SHA256 = '2.16.840.1.101.3.4.2.1';
const HASHES: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  [SHA256]: 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const SIGNED_DATA = '1.2.840.113549.1.7.2';
const TST_INFO = '1.2.840.113549.1.9.16.1.4';
const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';

/** A DER INTEGER's content for the non-negative number in `bytes`. */
const unsigned = (bytes: Buffer) => (bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);

/** A TimeStampReq for a SHA-256 `digest`, asking for the TSA's certificate in the answer. */
export function timestampRequest(digest: Buffer, nonce: Buffer): Buffer {
  const algorithm = der(0x30, oid(SHA256), Buffer.from([0x05, 0x00]));
  return der(
    0x30,
    der(0x02, Buffer.from([1])),
    der(0x30, algorithm, der(0x04, digest)),
    der(0x02, unsigned(nonce)),
    der(0x01, Buffer.from([0xff])),
  );
}

/** What a timestamp token says: the time, the imprint it covers, and the nonce it answers. */
interface TstInfo {
  genTime: Date;
  imprint: Buffer;
  nonce: Buffer | null;
}

/** The pieces of a timestamp token (a CMS SignedData over a TSTInfo). */
function tokenParts(token: Buffer) {
  const [type, wrapped] = children(readDer(token));
  if (!type || oidText(type) !== SIGNED_DATA || !wrapped) throw new Error('not a CMS SignedData');
  const signedData = children(children(wrapped)[0]!);
  const [contentType, content] = children(signedData[2]!);
  if (!contentType || oidText(contentType) !== TST_INFO || !content) throw new Error('not a timestamp token');
  const tstInfo = children(content)[0]!.content;
  const signerInfos = signedData.filter((d) => d.tag === 0x31).at(-1);
  const signer = signerInfos ? children(signerInfos)[0] : undefined;
  if (!signer) throw new Error('the token has no signer');
  return { tstInfo, signer: children(signer) };
}

function readTstInfo(tstInfo: Buffer): TstInfo {
  const fields = children(readDer(tstInfo));
  const imprint = children(fields[2]!);
  const genTime = fields.find((d) => d.tag === 0x18);
  if (!genTime) throw new Error('the token has no time');
  // After genTime: accuracy (a SEQUENCE), ordering (a BOOLEAN), then the nonce, an INTEGER.
  const nonce = fields.slice(fields.indexOf(genTime) + 1).find((d) => d.tag === 0x02);
  return {
    genTime: generalizedTime(genTime),
    imprint: imprint[1]!.content,
    nonce: nonce ? nonce.content : null,
  };
}

/**
 * Checks a timestamp token against the TSA's certificate: signed by the certificate's key (over its
 * signed attributes, whose message digest must be the TSTInfo's), over `digest`. Returns its time;
 * throws a sentence saying what does not hold.
 */
export function checkTimestamp(token: Buffer, digest: Buffer, tsa: X509Certificate): Date {
  const { tstInfo, signer } = tokenParts(token);
  const info = readTstInfo(tstInfo);
  if (!info.imprint.equals(digest)) throw new Error('the timestamp covers another checkpoint');
  const hash = HASHES[oidText(children(signer[2]!)[0]!)];
  if (!hash) throw new Error('the timestamp is signed with an unknown digest');
  const attributes = signer[3]?.tag === 0xa0 ? signer[3] : undefined;
  const rest = signer.slice(attributes ? 4 : 3);
  const signature = rest.find((d) => d.tag === 0x04);
  if (!signature) throw new Error('the timestamp has no signature');
  let signed = tstInfo;
  if (attributes) {
    const found = children(attributes).find((a) => oidText(children(a)[0]!) === MESSAGE_DIGEST);
    const value = found ? children(children(found)[1]!)[0]!.content : undefined;
    if (!value?.equals(createHash(hash).update(tstInfo).digest()))
      throw new Error('the timestamp’s signed attributes do not match its content');
    // The signature covers the attributes as a SET, not as the [0] they are stored under.
    signed = Buffer.concat([Buffer.from([0x31]), attributes.raw.subarray(1)]);
  }
  if (!verify(hash, signed, tsa.publicKey, signature.content))
    throw new Error('the timestamp is not signed by the given TSA certificate (another TSA, or changed)');
  return info.genTime;
}

/**
 * Asks the TSA at `url` for a timestamp over `digest` (RFC 3161 over HTTP): returns the token, after
 * checking that it answers this request (its imprint and nonce).
 */
export async function requestTimestamp(url: string, digest: Buffer, signal?: AbortSignal): Promise<Buffer> {
  const nonce = randomBytes(8);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/timestamp-query' },
    body: new Uint8Array(timestampRequest(digest, nonce)),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw new Error(`the TSA answered HTTP ${response.status}`);
  const [status, token] = children(readDer(Buffer.from(await response.arrayBuffer())));
  const granted = status ? children(status)[0]!.content.readUIntBE(0, 1) : -1;
  if ((granted !== 0 && granted !== 1) || !token)
    throw new Error(`the TSA refused the request (status ${granted})`);
  const info = readTstInfo(tokenParts(token.raw).tstInfo);
  const asNumber = (bytes: Buffer) => BigInt(`0x${bytes.toString('hex') || '0'}`);
  if (!info.imprint.equals(digest) || !info.nonce || asNumber(info.nonce) !== asNumber(nonce))
    throw new Error('the TSA answered another request');
  return Buffer.from(token.raw);
}
