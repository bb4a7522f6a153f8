'use strict';
// Node.js client for a lookahead sidecar: the SidecarService stub that
// @grpc/proto-loader builds at load time from lookahead.json (the API's
// descriptor, generated from api/proto by scripts/generate.js and shipped in
// the package), and a thin Promise / async-iterator wrapper over it.

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// Loader options, part of the API: fields in lowerCamelCase (missingIds,
// maxObjects), enums as their names ('CACHE_STATUS_HIT'), uint64 (version)
// as decimal strings so no precision is lost, payload as a Buffer, and
// defaults filled in (an object without refs has refs: []).
const LOADER_OPTIONS = { keepCase: false, longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true };

const packageDefinition = protoLoader.fromJSON(require('./lookahead.json'), LOADER_OPTIONS);
/** The lookahead.v1 package: SidecarService, OriginService and message types. */
const lookaheadV1 = grpc.loadPackageDefinition(packageDefinition).lookahead.v1;

/** CacheStatus names, as the status field of answers carries them. */
const CacheStatus = Object.freeze({
  UNSPECIFIED: 'CACHE_STATUS_UNSPECIFIED',
  MISS: 'CACHE_STATUS_MISS',
  HIT: 'CACHE_STATUS_HIT',
  HIT_PREFETCHED: 'CACHE_STATUS_HIT_PREFETCHED',
  JOINED: 'CACHE_STATUS_JOINED',
});

// hint builds a PrefetchHint, or none when nothing is overridden so that the
// sidecar's own settings apply; depth 0 is meaningful (no prefetch) and sent.
function hint({ depth, maxObjects, fields } = {}) {
  if (depth == null && maxObjects == null && !(fields && fields.length)) return undefined;
  const h = { fields: fields || [] };
  if (depth != null) h.depth = depth;
  if (maxObjects != null) h.maxObjects = maxObjects;
  return h;
}

/**
 * The results of one GetGraph call, in breadth-first order: iterate with
 * `for await`. Each result is { object, status, level }. missingIds collects
 * the ids reported as nonexistent; it is complete once iteration finished.
 * Leaving the loop early cancels the call.
 */
class GraphStream {
  constructor(call) {
    this.call = call;
    this.missingIds = [];
  }

  async *[Symbol.asyncIterator]() {
    try {
      for await (const chunk of this.call) {
        this.missingIds.push(...chunk.missingIds);
        yield* chunk.results;
      }
    } finally {
      // No-op once the stream has ended; stops the server streaming into a
      // call nobody reads when the loop was left early.
      this.call.cancel();
    }
  }

  /** Collects every result into an array. */
  async toArray() {
    const out = [];
    for await (const r of this) out.push(r);
    return out;
  }

  cancel() {
    this.call.cancel();
  }
}

/**
 * A connection to one lookahead sidecar.
 *
 * target is a gRPC target: '127.0.0.1:7070' for TCP or
 * 'unix:///run/lookahead.sock' for a unix socket. The channel is plaintext
 * unless options.credentials is given, as befits loopback inside a pod.
 * options.timeoutMs is the default deadline of every call (none when unset);
 * each method takes its own in its options too.
 *
 * Failed calls reject with grpc-js's ServiceError: err.code is a
 * grpc.status value (NOT_FOUND for a missing object, INVALID_ARGUMENT for
 * bad input, with err.details naming the problem).
 */
class LookaheadClient {
  constructor(target, { timeoutMs, credentials, channelOptions } = {}) {
    this.timeoutMs = timeoutMs;
    /** The generated stub, for calls the helpers do not cover. */
    this.stub = new lookaheadV1.SidecarService(
      target, credentials || grpc.credentials.createInsecure(), channelOptions);
  }

  close() {
    this.stub.close();
  }

  callOptions(timeoutMs) {
    const t = timeoutMs ?? this.timeoutMs;
    return t == null ? {} : { deadline: Date.now() + t };
  }

  unary(method, request, timeoutMs) {
    return new Promise((resolve, reject) => {
      this.stub[method](request, this.callOptions(timeoutMs), (err, resp) => (err ? reject(err) : resolve(resp)));
    });
  }

  /**
   * Resolves to { object, status } for one id. depth, maxObjects and fields
   * override the sidecar's prefetch for this request.
   */
  get(id, { depth, maxObjects, fields, timeoutMs } = {}) {
    return this.unary('Get', { id, hint: hint({ depth, maxObjects, fields }) }, timeoutMs);
  }

  /** Resolves to { results: [{ object, status }], missingIds }. */
  batchGet(ids, { depth, maxObjects, fields, timeoutMs } = {}) {
    return this.unary('BatchGet', { ids, hint: hint({ depth, maxObjects, fields }) }, timeoutMs);
  }

  /**
   * Streams the subgraph below roots (an id or an array) breadth-first.
   * depth and maxObjects left unset take the sidecar's settings.
   */
  getGraph(roots, { depth, maxObjects, fields, timeoutMs } = {}) {
    const req = { roots: Array.isArray(roots) ? roots : [roots], fields: fields || [] };
    if (depth != null) req.depth = depth;
    if (maxObjects != null) req.maxObjects = maxObjects;
    return new GraphStream(this.stub.GetGraph(req, this.callOptions(timeoutMs)));
  }

  /** Writes obj through to the origin; resolves to its new version (a string). */
  async put(obj, { expectedVersion, timeoutMs } = {}) {
    const req = { object: obj };
    if (expectedVersion != null) req.expectedVersion = String(expectedVersion);
    return (await this.unary('Put', req, timeoutMs)).version;
  }

  /** Deletes an object at the origin and drops the cached copy. */
  async delete(id, { expectedVersion, timeoutMs } = {}) {
    const req = { id };
    if (expectedVersion != null) req.expectedVersion = String(expectedVersion);
    await this.unary('Delete', req, timeoutMs);
  }

  /** Drops cached copies without touching the origin; resolves to how many were cached. */
  async invalidate(ids, { timeoutMs } = {}) {
    return (await this.unary('Invalidate', { ids }, timeoutMs)).invalidated;
  }
}

module.exports = { LookaheadClient, GraphStream, CacheStatus, lookaheadV1, grpc, status: grpc.status, LOADER_OPTIONS };
