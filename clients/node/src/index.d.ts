// Types of the lookahead Node.js client (src/index.js). Messages are plain
// objects as @grpc/proto-loader decodes them with LOADER_OPTIONS: fields in
// lowerCamelCase, enums as their names, uint64 as decimal strings, bytes as
// Buffers, defaults filled in.

import * as grpc from '@grpc/grpc-js';

export { grpc };
export declare const status: typeof grpc.status;

/** A cache status name, as the status field of answers carries it. */
export type CacheStatusName =
  | 'CACHE_STATUS_UNSPECIFIED'
  | 'CACHE_STATUS_MISS'
  | 'CACHE_STATUS_HIT'
  | 'CACHE_STATUS_HIT_PREFETCHED'
  | 'CACHE_STATUS_JOINED';

export declare const CacheStatus: Readonly<{
  UNSPECIFIED: 'CACHE_STATUS_UNSPECIFIED';
  MISS: 'CACHE_STATUS_MISS';
  HIT: 'CACHE_STATUS_HIT';
  HIT_PREFETCHED: 'CACHE_STATUS_HIT_PREFETCHED';
  JOINED: 'CACHE_STATUS_JOINED';
}>;

/** A named reference from one object to another. */
export interface Ref {
  field: string;
  id: string;
}

/** An object as the sidecar answers it. version is a uint64 as a decimal string. */
export interface LookaheadObject {
  id: string;
  version: string;
  type: string;
  refs: Ref[];
  payload: Buffer;
}

/** An object to write: version, type, refs and payload may be left out. */
export interface ObjectInput {
  id: string;
  version?: string | number;
  type?: string;
  refs?: Ref[];
  payload?: Buffer | Uint8Array;
}

export interface GetResponse {
  object: LookaheadObject;
  status: CacheStatusName;
  /** true when the object was answered from a copy past its TTL. */
  stale: boolean;
}

export interface Result {
  object: LookaheadObject;
  status: CacheStatusName;
  /** Reference distance from the nearest root (GetGraph); 0 in BatchGet. */
  level: number;
  stale: boolean;
}

export interface BatchGetResponse {
  results: Result[];
  missingIds: string[];
}

/** Call options every method takes. */
export interface CallOptions {
  /** Deadline of this call in milliseconds; the client's default when unset. */
  timeoutMs?: number;
}

/**
 * Overrides the sidecar's prefetch for one request; unset keeps the
 * sidecar's setting, depth 0 turns prefetching off.
 */
export interface PrefetchOptions extends CallOptions {
  depth?: number;
  maxObjects?: number;
  fields?: string[];
}

export interface WriteOptions extends CallOptions {
  /** Write only if the stored version is this one (0: must not exist yet). */
  expectedVersion?: string | number | bigint;
}

export interface ClientOptions {
  /** Default deadline of every call, in milliseconds; none when unset. */
  timeoutMs?: number;
  /** Channel credentials; plaintext when unset. */
  credentials?: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
}

/**
 * The results of one GetGraph call in breadth-first order. Leaving a
 * `for await` loop early cancels the call; missingIds is complete once
 * iteration finished.
 */
export declare class GraphStream implements AsyncIterable<Result> {
  readonly missingIds: string[];
  [Symbol.asyncIterator](): AsyncGenerator<Result, void, undefined>;
  toArray(): Promise<Result[]>;
  cancel(): void;
}

/** A connection to one lookahead sidecar. */
export declare class LookaheadClient {
  /** target: '127.0.0.1:7070' or 'unix:///run/lookahead.sock'. */
  constructor(target: string, options?: ClientOptions);
  /** The generated SidecarService stub, for calls the helpers do not cover. */
  readonly stub: grpc.Client & Record<string, (...args: any[]) => any>;
  close(): void;
  get(id: string, options?: PrefetchOptions): Promise<GetResponse>;
  batchGet(ids: string[], options?: PrefetchOptions): Promise<BatchGetResponse>;
  getGraph(roots: string | string[], options?: PrefetchOptions): GraphStream;
  /** Writes obj through to the origin; resolves to its new version. */
  put(obj: ObjectInput, options?: WriteOptions): Promise<string>;
  /** Deletes an object at the origin and drops the cached copy. */
  delete(id: string, options?: WriteOptions): Promise<void>;
  /** Drops cached copies; resolves to how many were cached. */
  invalidate(ids: string[], options?: CallOptions): Promise<number>;
}

/** The loaded lookahead.v1 package: SidecarService, OriginService and messages. */
export declare const lookaheadV1: grpc.GrpcObject;

/** The @grpc/proto-loader options the messages are decoded with. */
export declare const LOADER_OPTIONS: Readonly<Record<string, unknown>>;
