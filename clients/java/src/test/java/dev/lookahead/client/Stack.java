package dev.lookahead.client;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The real origin, seeded with three db4o task trees, and a sidecar in front of it, on free ports. */
final class Stack implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
  private static final Pattern SAMPLE =
      Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})?\\s+(\\S+)");

  final Path workdir;
  final Path unixSocket;
  private final List<Proc> procs = new ArrayList<>(); // in start order
  private final HttpClient http = HttpClient.newHttpClient();
  private final Thread reaper = new Thread(this::killAll, "lookahead-stack-reaper");
  Proc origin;
  Proc sidecar;
  Proc staleSidecar; // --ttl 100ms --stale-while-revalidate 1h: answers stale copies

  /** A started process and the addresses it wrote to its --addr-file. */
  static final class Proc {
    final String name;
    final Process process;
    final Path log;
    String grpc = "";
    String metrics = "";

    Proc(String name, Process process, Path log) {
      this.name = name;
      this.process = process;
      this.log = log;
    }

    String logTail() {
      try {
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
      } catch (IOException e) {
        return "";
      }
    }

    /** SIGTERM, then SIGKILL after grace; safe to call twice. */
    void stop(Duration grace) throws InterruptedException {
      if (!process.isAlive()) {
        return;
      }
      process.destroy(); // SIGTERM on Linux
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        process.waitFor();
      }
    }
  }

  private Stack(Path workdir) {
    this.workdir = workdir;
    this.unixSocket = workdir.resolve("sidecar.sock");
    // Whatever happens to the test JVM short of SIGKILL, no child outlives it.
    Runtime.getRuntime().addShutdownHook(reaper);
  }

  static Path binDir() {
    String env = System.getenv("LOOKAHEAD_BIN");
    Path repo = Path.of(System.getenv().getOrDefault("LOOKAHEAD_REPO", "../..")).toAbsolutePath().normalize();
    Path dir = env == null || env.isEmpty() ? repo.resolve("bin") : Path.of(env);
    for (String name : List.of("origin", "sidecar")) {
      if (!Files.isExecutable(dir.resolve(name))) {
        // A missing binary is a failure, never a skip.
        throw new IllegalStateException(
            dir.resolve(name) + " is missing; run `make build` in " + repo + " or set LOOKAHEAD_BIN");
      }
    }
    return dir;
  }

  static Stack start() throws Exception {
    Path bins = binDir();
    // Under /tmp the unix socket path stays under the 108-byte limit.
    Stack s = new Stack(Files.createTempDirectory(Path.of("/tmp"), "lookahead-java-"));
    try {
      s.origin = s.launch(bins.resolve("origin"), List.of(
          "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", s.workdir.resolve("data").toString(),
          "--seed", "tasks", "--task-roots", "3"));
      waitServing(s.origin);
      s.sidecar = s.launch(bins.resolve("sidecar"), List.of(
          "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", s.origin.grpc,
          "--unix-socket", s.unixSocket.toString(), "--health-interval", "100ms"));
      waitServing(s.sidecar);
      s.staleSidecar = s.launch(bins.resolve("sidecar"), "stale-sidecar", List.of(
          "--listen", "127.0.0.1:0", "--metrics-listen", "", "--origin", s.origin.grpc,
          "--ttl", "100ms", "--stale-while-revalidate", "1h", "--health-interval", "100ms"));
      waitServing(s.staleSidecar);
      return s;
    } catch (Exception | Error e) {
      s.close();
      throw e;
    }
  }

  String target() {
    return sidecar.grpc;
  }

  /** Runs binary with --addr-file and returns once it has written its addresses. */
  private Proc launch(Path binary, List<String> args) throws Exception {
    return launch(binary, binary.getFileName().toString(), args);
  }

  /** launch under another name, for a second process of the same binary. */
  private Proc launch(Path binary, String name, List<String> args) throws Exception {
    Path addrFile = workdir.resolve(name + ".addr");
    Path log = workdir.resolve(name + ".log");
    List<String> cmd = new ArrayList<>();
    cmd.add(binary.toString());
    cmd.addAll(args);
    cmd.add("--addr-file");
    cmd.add(addrFile.toString());
    Process process = new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .start();
    Proc p = new Proc(name, process, log);
    procs.add(p);
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (true) {
      if (Files.exists(addrFile)) {
        for (String line : Files.readAllLines(addrFile)) {
          String[] f = line.trim().split("\\s+");
          // One grpc line per listener; a unix socket's is a bare path, and
          // the TCP one is what the tests dial.
          if (f.length == 2 && f[0].equals("grpc") && !f[1].startsWith("/") && p.grpc.isEmpty()) {
            p.grpc = f[1];
          } else if (f.length == 2 && f[0].equals("metrics")) {
            p.metrics = f[1];
          }
        }
        if (!p.grpc.isEmpty()) {
          return p;
        }
      }
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited with " + process.exitValue() + " at start:\n" + p.logTail());
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(name + " wrote no address in " + START_TIMEOUT + ":\n" + p.logTail());
      }
      Thread.sleep(10);
    }
  }

  /** Polls grpc.health.v1.Health/Check (service "") until SERVING. */
  private static void waitServing(Proc p) throws InterruptedException {
    ManagedChannel ch = Grpc.newChannelBuilder(p.grpc, InsecureChannelCredentials.create()).build();
    try {
      HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(ch);
      long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
      Object last = null;
      while (System.nanoTime() < deadline) {
        if (!p.process.isAlive()) {
          throw new IllegalStateException(p.name + " exited with " + p.process.exitValue() + ":\n" + p.logTail());
        }
        try {
          HealthCheckResponse resp = health.withDeadlineAfter(1, TimeUnit.SECONDS)
              .check(HealthCheckRequest.newBuilder().setService("").build());
          if (resp.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
            return;
          }
          last = resp.getStatus();
        } catch (StatusRuntimeException e) {
          last = e.getStatus();
        }
        Thread.sleep(20);
      }
      throw new IllegalStateException(
          p.name + " not SERVING after " + START_TIMEOUT + " (last: " + last + "):\n" + p.logTail());
    } finally {
      ch.shutdownNow();
    }
  }

  /** The sum of every sample of counter name on the sidecar's /metrics; the name must be exposed. */
  double counter(String name) throws IOException, InterruptedException {
    return counter(name, true);
  }

  /**
   * Sums every sample of counter name (all label sets) on the sidecar's
   * /metrics. A labelled counter shows no sample before its first increment;
   * that reads as 0 only when not required, so a misspelt name cannot pass for 0.
   */
  double counter(String name, boolean required) throws IOException, InterruptedException {
    HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + sidecar.metrics + "/metrics"))
        .timeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
    if (resp.statusCode() != 200) {
      throw new IOException("GET /metrics: " + resp.statusCode());
    }
    double total = 0;
    boolean seen = false;
    for (String line : resp.body().split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (m.find() && m.group(1).equals(name)) {
        total += Double.parseDouble(m.group(3));
        seen = true;
      }
    }
    if (!seen && required) {
      throw new AssertionError("metric " + name + " not exposed on " + sidecar.metrics + "/metrics");
    }
    return total;
  }

  /** Stops the sidecar, then the origin, and removes the work directory. */
  @Override
  public void close() throws InterruptedException, IOException {
    for (int i = procs.size() - 1; i >= 0; i--) {
      procs.get(i).stop(Duration.ofSeconds(10));
    }
    try {
      Runtime.getRuntime().removeShutdownHook(reaper);
    } catch (IllegalStateException shuttingDown) {
      // the hook is running or about to
    }
    try (Stream<Path> paths = Files.walk(workdir)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }

  private void killAll() {
    for (Proc p : procs) {
      p.process.destroyForcibly();
    }
  }
}
