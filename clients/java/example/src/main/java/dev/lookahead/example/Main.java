package dev.lookahead.example;

import com.google.protobuf.ByteString;
import dev.lookahead.client.GraphStream;
import dev.lookahead.client.LookaheadClient;
import dev.lookahead.client.Prefetch;
import dev.lookahead.v1.GetResponse;
import dev.lookahead.v1.Ref;
import dev.lookahead.v1.Result;
import java.time.Duration;
import java.util.List;

/**
 * Reads a task tree through a lookahead sidecar, writes a note that refers
 * to it, and drops the note's cached copy. Usage: {@code Main [target]},
 * target defaulting to 127.0.0.1:7070 (or unix:///path/to/socket).
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    String target = args.length > 0 ? args[0] : "127.0.0.1:7070";
    try (LookaheadClient client = new LookaheadClient(target, Duration.ofSeconds(5))) {
      GetResponse root = client.get("task-0");
      System.out.printf("%s: %d refs, %s, stale=%b%n", root.getObject().getId(),
          root.getObject().getRefsCount(), root.getStatus(), root.getStale());
      client.get("task-0.1", Prefetch.off()); // no prefetch for this request

      try (GraphStream graph = client.getGraph(List.of("task-0"), 2)) {
        for (Result r : graph) {
          System.out.println(r.getLevel() + " " + r.getObject().getId() + " " + r.getStatus());
        }
      }

      dev.lookahead.v1.Object note = dev.lookahead.v1.Object.newBuilder()
          .setId("note-1").setType("Note").setPayload(ByteString.copyFromUtf8("read task-0"))
          .addRefs(Ref.newBuilder().setField("about").setId("task-0"))
          .build();
      long version = client.put(note);
      System.out.println("note-1 at version " + version);
      System.out.println("invalidated " + client.invalidate(List.of("note-1")));
      client.delete("note-1", version);
    }
  }
}
