package dev.lookahead.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.lookahead.v1.BatchGetResponse;
import dev.lookahead.v1.CacheStatus;
import dev.lookahead.v1.GetResponse;
import dev.lookahead.v1.Ref;
import dev.lookahead.v1.Result;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** End-to-end tests of the Java client against the real origin and sidecar binaries. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SidecarTest {
  private static final int TREE_SIZE = 781; // db4o task tree: 5 levels of fan-out 5 below a root
  private static final String ROUND_TRIPS = "lookahead_origin_round_trips_total";
  // grpc-java asks every channel for SO_KEEPALIVE; a unix socket has none and
  // netty warns about it. Held here so the level is not garbage collected.
  private static final Logger NETTY_BOOTSTRAP =
      Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap");

  static {
    NETTY_BOOTSTRAP.setLevel(Level.SEVERE);
  }

  private Stack stack;
  private LookaheadClient client;
  private List<GetResponse> firstWalk; // of task-0, made once by firstWalk()
  private double firstWalkRoundTrips;

  @BeforeAll
  void start() throws Exception {
    stack = Stack.start();
    client = new LookaheadClient(stack.target(), Duration.ofSeconds(10));
  }

  @AfterAll
  void stop() throws Exception {
    try {
      if (client != null) {
        client.close();
      }
    } finally {
      if (stack != null) {
        stack.close();
      }
    }
  }

  /**
   * The ids of the seeded task tree below root, with their level. Task k of a
   * tree (its breadth-first index) is root.k, root itself for k = 0, and has
   * the subtasks 5k+1 .. 5k+5.
   */
  static Map<String, Integer> treeIds(String root) {
    Map<String, Integer> ids = new LinkedHashMap<>();
    int k = 0;
    for (int level = 0, width = 1; level < 5; level++, width *= 5) {
      for (int i = 0; i < width; i++, k++) {
        ids.put(k == 0 ? root : root + "." + k, level);
      }
    }
    return ids;
  }

  /** Activates a tree the way db4o does: one Get per object, breadth-first. */
  private List<GetResponse> walk(String root) {
    List<GetResponse> got = new ArrayList<>();
    ArrayDeque<String> queue = new ArrayDeque<>(List.of(root));
    while (!queue.isEmpty()) {
      String id = queue.removeFirst();
      GetResponse resp = client.get(id);
      assertEquals(id, resp.getObject().getId());
      got.add(resp);
      for (Ref r : resp.getObject().getRefsList()) {
        if (r.getField().equals("subtasks")) {
          queue.addLast(r.getId());
        }
      }
      assertTrue(got.size() <= 10 * TREE_SIZE, "walk does not terminate");
    }
    return got;
  }

  private synchronized List<GetResponse> firstWalk() throws Exception {
    if (firstWalk == null) {
      double before = stack.counter(ROUND_TRIPS, false); // no sample before the first round trip
      firstWalk = walk("task-0");
      firstWalkRoundTrips = stack.counter(ROUND_TRIPS) - before;
    }
    return firstWalk;
  }

  /** Waits until the round-trip counter has not moved for 300 ms (in-flight prefetches done). */
  private double settle() throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    double last = stack.counter(ROUND_TRIPS);
    while (System.nanoTime() < deadline) {
      Thread.sleep(300);
      double now = stack.counter(ROUND_TRIPS);
      if (now == last) {
        return now;
      }
      last = now;
    }
    throw new AssertionError(ROUND_TRIPS + " still moving after 10s");
  }

  private static List<String> ids(List<GetResponse> got) {
    return got.stream().map(r -> r.getObject().getId()).toList();
  }

  @Test
  void walkByGetReturnsTheWholeTree() throws Exception {
    List<String> ids = ids(firstWalk());
    assertEquals(TREE_SIZE, ids.size());
    assertEquals(TREE_SIZE, new HashSet<>(ids).size(), "an object came back twice");
    assertEquals(treeIds("task-0").keySet(), new HashSet<>(ids));
    // The counter is live: a cold walk had to reach the origin.
    assertTrue(firstWalkRoundTrips > 0, "no origin round trip counted for a cold walk");
  }

  @Test
  void secondWalkIsAllHitsWithoutRoundTrips() throws Exception {
    firstWalk();
    double trips = settle();
    double hits = stack.counter("lookahead_cache_hits_total");
    double misses = stack.counter("lookahead_cache_misses_total");
    List<GetResponse> second = walk("task-0");
    assertEquals(TREE_SIZE, second.size());
    List<String> notHits = second.stream()
        .filter(r -> r.getStatus() != CacheStatus.CACHE_STATUS_HIT
            && r.getStatus() != CacheStatus.CACHE_STATUS_HIT_PREFETCHED)
        .map(r -> r.getObject().getId() + ": " + r.getStatus())
        .toList();
    assertEquals(List.of(), notHits);
    assertEquals(trips, stack.counter(ROUND_TRIPS), "origin round trips during the second walk");
    assertEquals(TREE_SIZE, stack.counter("lookahead_cache_hits_total") - hits);
    assertEquals(misses, stack.counter("lookahead_cache_misses_total"));
  }

  @Test
  void getGraphStreamsTheTreeBreadthFirst() {
    Map<String, Integer> want = treeIds("task-1");
    List<Result> results;
    List<String> missing;
    try (GraphStream stream = client.getGraph(List.of("task-1"), 4)) {
      results = stream.toList();
      missing = stream.missingIds();
    }
    List<String> ids = results.stream().map(r -> r.getObject().getId()).toList();
    assertEquals(TREE_SIZE, ids.size());
    assertEquals(TREE_SIZE, new HashSet<>(ids).size(), "an object came back twice");
    assertEquals(want.keySet(), new HashSet<>(ids));
    List<Integer> levels = results.stream().map(Result::getLevel).toList();
    assertEquals(levels.stream().sorted().toList(), levels, "levels out of breadth-first order");
    for (Result r : results) {
      assertEquals(want.get(r.getObject().getId()), r.getLevel(), r.getObject().getId() + " level");
    }
    Map<Integer, Long> perLevel = levels.stream().collect(Collectors.groupingBy(l -> l, Collectors.counting()));
    assertEquals(Map.of(0, 1L, 1, 5L, 2, 25L, 3, 125L, 4, 625L), perLevel);
    assertEquals(List.of(), missing);
  }

  @Test
  void getGraphCanBeLeftEarly() {
    try (GraphStream stream = client.getGraph(List.of("task-1"), 4)) {
      Result first = stream.next();
      assertEquals("task-1", first.getObject().getId());
      assertEquals(0, first.getLevel());
    }
  }

  @Test
  void batchGetListsMissingIds() {
    BatchGetResponse resp = client.batchGet(List.of("task-0.1", "no-such-task", "task-0.2", "task-0.1"));
    assertEquals(List.of("task-0.1", "task-0.2"),
        resp.getResultsList().stream().map(r -> r.getObject().getId()).toList());
    assertEquals(List.of("no-such-task"), resp.getMissingIdsList());
  }

  @Test
  void depthZeroHintTurnsPrefetchOff() {
    GetResponse parent = client.get("task-2.7", Prefetch.off());
    assertEquals(CacheStatus.CACHE_STATUS_MISS, parent.getStatus());
    assertEquals(IntStream.rangeClosed(36, 40).mapToObj(k -> "task-2." + k).toList(),
        parent.getObject().getRefsList().stream().map(Ref::getId).toList());
    GetResponse child = client.get("task-2.36", Prefetch.off());
    assertEquals(CacheStatus.CACHE_STATUS_MISS, child.getStatus(), "the child was prefetched");
  }

  @Test
  void getOfMissingIdIsNotFound() {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> client.get("no-such-task"));
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("no-such-task"), e.getStatus().getDescription());
  }

  @Test
  void getWithEmptyIdIsInvalidArgument() {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> client.get(""));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("empty id"), e.getStatus().getDescription());
  }

  @Test
  void batchGetOfMoreThan1000IdsIsInvalidArgument() {
    List<String> ids = IntStream.range(0, 1001).mapToObj(i -> "task-0." + i).toList();
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> client.batchGet(ids));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    String msg = e.getStatus().getDescription();
    assertTrue(msg.contains("ids: 1001 ids exceed the limit of 1000"), msg);
  }

  @Test
  void connectsOverAUnixSocket() {
    try (LookaheadClient uc = new LookaheadClient("unix://" + stack.unixSocket, Duration.ofSeconds(10))) {
      GetResponse resp = uc.get("task-2.5", Prefetch.off());
      assertEquals("task-2.5", resp.getObject().getId());
      assertEquals(IntStream.rangeClosed(26, 30).mapToObj(k -> "subtasks task-2." + k).toList(),
          resp.getObject().getRefsList().stream().map(r -> r.getField() + " " + r.getId()).toList());
    }
  }

  @Test
  void putGetDeleteWriteThrough() {
    String id = "java-put-" + System.nanoTime();
    dev.lookahead.v1.Object obj = dev.lookahead.v1.Object.newBuilder()
        .setId(id).setType("Note").setPayload(ByteString.copyFromUtf8("hello"))
        .addRefs(Ref.newBuilder().setField("parent").setId("task-0")).build();
    assertEquals(1, client.put(obj, 0)); // 0: must not exist yet
    GetResponse got = client.get(id, Prefetch.off());
    assertEquals("hello", got.getObject().getPayload().toStringUtf8());
    assertEquals(1, got.getObject().getVersion());
    assertEquals("task-0", got.getObject().getRefs(0).getId());

    StatusRuntimeException stale = assertThrows(StatusRuntimeException.class, () -> client.put(obj, 0));
    assertEquals(Status.Code.FAILED_PRECONDITION, stale.getStatus().getCode());
    assertEquals(2, client.put(obj.toBuilder().setPayload(ByteString.copyFromUtf8("again")).build(), 1));
    assertEquals("again", client.get(id).getObject().getPayload().toStringUtf8());

    StatusRuntimeException wrong = assertThrows(StatusRuntimeException.class, () -> client.delete(id, 1));
    assertEquals(Status.Code.FAILED_PRECONDITION, wrong.getStatus().getCode());
    client.delete(id, 2);
    StatusRuntimeException gone = assertThrows(StatusRuntimeException.class, () -> client.get(id));
    assertEquals(Status.Code.NOT_FOUND, gone.getStatus().getCode());
  }

  @Test
  void invalidateDropsTheCachedCopy() {
    client.get("task-2.3", Prefetch.off());
    assertEquals(CacheStatus.CACHE_STATUS_HIT, client.get("task-2.3", Prefetch.off()).getStatus());
    assertEquals(1, client.invalidate(List.of("task-2.3", "no-such-task")));
    assertEquals(CacheStatus.CACHE_STATUS_MISS, client.get("task-2.3", Prefetch.off()).getStatus());
  }

  @Test
  void staleFlagPastTheTtl() throws InterruptedException {
    try (LookaheadClient sc = new LookaheadClient(stack.staleSidecar.grpc, Duration.ofSeconds(10))) {
      GetResponse first = sc.get("task-1.2", Prefetch.off());
      assertFalse(first.getStale(), "a fresh fetch is not stale");
      // Past the 100 ms TTL the sidecar answers its copy marked stale and
      // refetches it in the background; poll until an answer is stale.
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      GetResponse resp = first;
      while (!resp.getStale()) {
        assertTrue(System.nanoTime() < deadline, "no stale answer within 10 s");
        Thread.sleep(50);
        resp = sc.get("task-1.2", Prefetch.off());
      }
      assertEquals("task-1.2", resp.getObject().getId());
      assertEquals(CacheStatus.CACHE_STATUS_HIT, resp.getStatus());
      try (GraphStream graph = sc.getGraph(List.of("task-1.2"), 0)) {
        Result r = graph.next();
        assertEquals("task-1.2", r.getObject().getId());
      }
    }
  }
}
