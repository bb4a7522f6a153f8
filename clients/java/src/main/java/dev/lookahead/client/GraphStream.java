package dev.lookahead.client;

import dev.lookahead.v1.GetGraphResponse;
import dev.lookahead.v1.Result;
import io.grpc.Context;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The results of one GetGraph call in breadth-first order, read as they
 * arrive. Each {@link Result} carries the object, its cache status and its
 * level. {@link #missingIds()} is complete once the iterator is exhausted.
 * Close the stream when leaving early: that cancels the call.
 */
public final class GraphStream implements Iterator<Result>, Iterable<Result>, AutoCloseable {
  private final Context.CancellableContext context; // the call runs in it; cancelled by close
  private final Iterator<GetGraphResponse> chunks;
  private final List<String> missing = new ArrayList<>();
  private Iterator<Result> current = Collections.emptyIterator();

  GraphStream(Context.CancellableContext context, Iterator<GetGraphResponse> chunks) {
    this.context = context;
    this.chunks = chunks;
  }

  @Override
  public boolean hasNext() {
    while (!current.hasNext()) {
      // The blocking iterator throws StatusRuntimeException on a failed call.
      if (!chunks.hasNext()) {
        close();
        return false;
      }
      GetGraphResponse chunk = chunks.next();
      missing.addAll(chunk.getMissingIdsList());
      current = chunk.getResultsList().iterator();
    }
    return true;
  }

  @Override
  public Result next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return current.next();
  }

  /** This stream itself, so that it reads in a for-each loop; it iterates once. */
  @Override
  public Iterator<Result> iterator() {
    return this;
  }

  /** Reads the rest of the stream into a list. */
  public List<Result> toList() {
    List<Result> out = new ArrayList<>();
    forEachRemaining(out::add);
    return out;
  }

  /** The ids reported as nonexistent so far. */
  public List<String> missingIds() {
    return Collections.unmodifiableList(missing);
  }

  /** Cancels the call if it is still streaming; idempotent. */
  @Override
  public void close() {
    context.cancel(null);
  }
}
