package dev.lookahead.client;

import dev.lookahead.v1.BatchGetRequest;
import dev.lookahead.v1.BatchGetResponse;
import dev.lookahead.v1.DeleteRequest;
import dev.lookahead.v1.GetGraphRequest;
import dev.lookahead.v1.GetRequest;
import dev.lookahead.v1.GetResponse;
import dev.lookahead.v1.InvalidateRequest;
import dev.lookahead.v1.PrefetchHint;
import dev.lookahead.v1.PutRequest;
import dev.lookahead.v1.SidecarServiceGrpc.SidecarServiceBlockingStub;
import dev.lookahead.v1.SidecarServiceGrpc;
import io.grpc.Context;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A blocking client of one lookahead sidecar; safe for concurrent use.
 *
 * <p>Failed calls throw {@link io.grpc.StatusRuntimeException}: {@code
 * NOT_FOUND} for a missing object, {@code INVALID_ARGUMENT} for bad input
 * (the description names the problem), {@code UNAVAILABLE} when neither the
 * cache nor the origin can answer.
 */
public final class LookaheadClient implements AutoCloseable {
  private final ManagedChannel channel; // owned: closed by close()
  private final SidecarServiceBlockingStub stub;
  private final Duration timeout; // per call; null = no deadline

  /**
   * Connects to a sidecar at target: {@code "127.0.0.1:7070"} for TCP or
   * {@code "unix:///run/lookahead.sock"} for a unix socket, in plaintext as
   * befits loopback inside a pod. timeout is the deadline of every call, or
   * null for none.
   */
  public LookaheadClient(String target, Duration timeout) {
    this(Grpc.newChannelBuilder(target, InsecureChannelCredentials.create()).build(), timeout);
  }

  /** Connects to target without deadlines. */
  public LookaheadClient(String target) {
    this(target, null);
  }

  /** Uses a channel built by the caller (TLS, interceptors); close() shuts it down. */
  public LookaheadClient(ManagedChannel channel, Duration timeout) {
    this.channel = channel;
    this.stub = SidecarServiceGrpc.newBlockingStub(channel);
    this.timeout = timeout;
  }

  /** The generated blocking stub, with this client's deadline applied, for calls the helpers do not cover. */
  public SidecarServiceBlockingStub stub() {
    return timeout == null ? stub : stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Returns one object and where the sidecar found it, with the sidecar's prefetch settings. */
  public GetResponse get(String id) {
    return get(id, Prefetch.DEFAULT);
  }

  /** Returns one object and where the sidecar found it; prefetch overrides the prefetch for this request. */
  public GetResponse get(String id, Prefetch prefetch) {
    GetRequest.Builder req = GetRequest.newBuilder().setId(id);
    PrefetchHint hint = prefetch.toHint();
    if (hint != null) {
      req.setHint(hint);
    }
    return stub().get(req.build());
  }

  /** Returns the objects found among ids, in request order, and the ids that are missing. */
  public BatchGetResponse batchGet(List<String> ids) {
    return batchGet(ids, Prefetch.DEFAULT);
  }

  public BatchGetResponse batchGet(List<String> ids, Prefetch prefetch) {
    BatchGetRequest.Builder req = BatchGetRequest.newBuilder().addAllIds(ids);
    PrefetchHint hint = prefetch.toHint();
    if (hint != null) {
      req.setHint(hint);
    }
    return stub().batchGet(req.build());
  }

  /**
   * Streams the subgraph below roots breadth-first, depth reference levels
   * deep (null = the sidecar's setting). Use it in try-with-resources.
   */
  public GraphStream getGraph(List<String> roots, Integer depth) {
    GetGraphRequest.Builder req = GetGraphRequest.newBuilder().addAllRoots(roots);
    if (depth != null) {
      req.setDepth(depth);
    }
    return getGraph(req.build());
  }

  /** Streams the subgraph a full request describes (max_objects, fields). */
  public GraphStream getGraph(GetGraphRequest request) {
    // The call is bound to this context, so cancelling it ends the stream
    // when the caller stops reading early.
    Context.CancellableContext ctx = Context.current().withCancellation();
    Context previous = ctx.attach();
    try {
      return new GraphStream(ctx, stub().getGraph(request));
    } finally {
      ctx.detach(previous);
    }
  }

  /** Writes obj through to the origin and returns its new version. */
  public long put(dev.lookahead.v1.Object obj) {
    return stub().put(PutRequest.newBuilder().setObject(obj).build()).getVersion();
  }

  /** Writes obj only if its stored version is expectedVersion (0 = must not exist yet). */
  public long put(dev.lookahead.v1.Object obj, long expectedVersion) {
    return stub()
        .put(PutRequest.newBuilder().setObject(obj).setExpectedVersion(expectedVersion).build())
        .getVersion();
  }

  /** Deletes an object at the origin and drops the cached copy. */
  public void delete(String id) {
    stub().delete(DeleteRequest.newBuilder().setId(id).build());
  }

  /** Deletes an object only if its stored version is expectedVersion. */
  public void delete(String id, long expectedVersion) {
    stub().delete(DeleteRequest.newBuilder().setId(id).setExpectedVersion(expectedVersion).build());
  }

  /** Drops cached copies without touching the origin; returns how many were cached. */
  public int invalidate(List<String> ids) {
    return stub().invalidate(InvalidateRequest.newBuilder().addAllIds(ids).build()).getInvalidated();
  }

  /** Shuts the channel down, waiting up to five seconds for calls in flight. */
  @Override
  public void close() {
    channel.shutdown();
    try {
      if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
