package dev.lookahead.client;

import java.util.List;
import dev.lookahead.v1.PrefetchHint;

/**
 * Overrides the sidecar's prefetch settings for one request. A null depth or
 * maxObjects, and an empty fields list, keep the sidecar's setting; depth 0
 * turns prefetching off for the request.
 */
public record Prefetch(Integer depth, Integer maxObjects, List<String> fields) {

  /** The sidecar's own settings: no hint is sent. */
  public static final Prefetch DEFAULT = new Prefetch(null, null, List.of());

  public Prefetch {
    fields = fields == null ? List.of() : List.copyOf(fields);
  }

  /** Prefetch depth reference levels below each answered object. */
  public static Prefetch depth(int depth) {
    return new Prefetch(depth, null, List.of());
  }

  /** No prefetching for this request. */
  public static Prefetch off() {
    return depth(0);
  }

  /** The hint message, or null when nothing is overridden. */
  PrefetchHint toHint() {
    if (depth == null && maxObjects == null && fields.isEmpty()) {
      return null;
    }
    PrefetchHint.Builder b = PrefetchHint.newBuilder().addAllFields(fields);
    if (depth != null) {
      b.setDepth(depth);
    }
    if (maxObjects != null) {
      b.setMaxObjects(maxObjects);
    }
    return b.build();
  }
}
