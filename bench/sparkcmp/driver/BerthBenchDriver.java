import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * berthbench's Spark application, the same jar on berth and on Spark
 * standalone: it waits for its executors, runs one job of sleeping tasks,
 * optionally holds until berthbench closes its stdin, and stops. Every
 * step is a BERTHBENCH line on stdout with its time in epoch ms.
 *
 * Arguments: --executors N --cores C --tasks T --task-ms M --wait-s S [--hold-s H]
 * Exit codes: 0 done, 3 the executors did not come within S seconds (or
 * the context stopped first), 4 the job failed, 2 bad arguments.
 */
public final class BerthBenchDriver {
  public static void main(String[] args) throws Exception {
    long mainAt = System.currentTimeMillis();
    int executors = 1, cores = 0, tasks = 0, taskMs = 0, waitS = 120, holdS = 0;
    for (int i = 0; i + 1 < args.length; i += 2) {
      int v = Integer.parseInt(args[i + 1]);
      switch (args[i]) {
        case "--executors": executors = v; break;
        case "--cores": cores = v; break;
        case "--tasks": tasks = v; break;
        case "--task-ms": taskMs = v; break;
        case "--wait-s": waitS = v; break;
        case "--hold-s": holdS = v; break;
        default:
          System.err.println("BerthBenchDriver: unknown argument " + args[i]);
          System.exit(2);
      }
    }
    BerthBenchListener.say("main", mainAt);
    JavaSparkContext sc = new JavaSparkContext(new SparkConf());
    int code = 0;
    try {
      BerthBenchListener.say("context", System.currentTimeMillis(), sc.sc().applicationId());
      BerthBenchListener l = BerthBenchListener.instance();
      if (l == null) {
        throw new IllegalStateException("spark.extraListeners does not name BerthBenchListener");
      }
      long deadline = System.currentTimeMillis() + TimeUnit.SECONDS.toMillis(waitS);
      if (!l.awaitExecutors(executors, cores, deadline, sc.sc())) {
        BerthBenchListener.say("timeout", System.currentTimeMillis(), l.liveCount(), l.liveCores());
        code = 3;
      } else {
        BerthBenchListener.say("ready", System.currentTimeMillis(), l.liveCount(), l.liveCores());
        if (tasks > 0) {
          code = runJob(sc, tasks, taskMs);
        }
        if (holdS > 0) {
          hold(holdS);
        }
      }
    } finally {
      if (!sc.sc().isStopped()) {
        sc.stop();
      }
      BerthBenchListener.say("stopped", System.currentTimeMillis());
    }
    System.exit(code);
  }

  /** One job of tasks tasks, each sleeping taskMs; 4 if it fails. */
  private static int runJob(JavaSparkContext sc, int tasks, int taskMs) {
    List<Integer> xs = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      xs.add(i);
    }
    BerthBenchListener.say("job-start", System.currentTimeMillis(), tasks, taskMs);
    try {
      long n = sc.parallelize(xs, tasks).map(x -> {
        if (taskMs > 0) {
          Thread.sleep(taskMs);
        }
        return x;
      }).count();
      BerthBenchListener.say("job-end", System.currentTimeMillis(), n);
      return 0;
    } catch (Exception e) {
      BerthBenchListener.say("job-failed", System.currentTimeMillis(), e.getMessage());
      return 4;
    }
  }

  /**
   * Holds the context (and its executors) until stdin ends or gives a
   * line, at most holdS seconds: berthbench releases the app once it has
   * seen what it waits for, and a berthbench that died ends the app too.
   */
  private static void hold(int holdS) throws InterruptedException {
    BerthBenchListener.say("holding", System.currentTimeMillis());
    CountDownLatch released = new CountDownLatch(1);
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        in.readLine();
      } catch (Exception e) {
        // A broken stdin releases the app as its end does.
      }
      released.countDown();
    }, "berthbench-hold");
    reader.setDaemon(true);
    reader.start();
    boolean byBench = released.await(holdS, TimeUnit.SECONDS);
    BerthBenchListener.say("released", System.currentTimeMillis(), byBench ? "stdin" : "hold-timeout");
  }
}
