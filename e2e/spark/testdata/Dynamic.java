// Dynamic allocation's round trip: a job that brings executors, a wait
// (polled, with a deadline) until Spark has released them all for their
// idleness, then idle until the file GATE exists (the test's checks of
// berth are done), no executor coming back meanwhile, then a second job
// that brings new ones. Prints each job's answer and "Dynamic OK".
// With HOLD, the first job's last task runs until the file HOLD exists:
// Spark's target falls to the one executor it needs, and the other idles
// and is killed, while the job still runs.
//   Dynamic TASKS TASK_SLEEP_MS GATE [HOLD]
import java.io.File;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public final class Dynamic {
  public static void main(String[] args) throws Exception {
    int tasks = Integer.parseInt(args[0]);
    long sleepMs = Long.parseLong(args[1]);
    File gate = new File(args[2]);
    String hold = args.length > 3 ? args[3] : null;
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("berth-dynamic"))) {
      List<Integer> slices = new ArrayList<>();
      for (int i = 0; i < tasks; i++) slices.add(i);
      for (int round = 1; round <= 2; round++) {
        String held = round == 1 ? hold : null;
        long sum = sc.parallelize(slices, tasks).map(i -> {
          if (held != null && i == tasks - 1) {
            waitFor(new File(held));
          } else {
            Thread.sleep(sleepMs);
          }
          return (long) i;
        }).reduce(Long::sum);
        System.out.println("round " + round + ": sum " + sum);
        if (sum != (long) tasks * (tasks - 1) / 2) throw new IllegalStateException("wrong sum");
        if (round == 1) {
          waitIdle(sc, gate);
        }
      }
      System.out.println("Dynamic OK");
    }
  }

  /** Waits (in a task, polling, with a deadline) until file exists. */
  private static void waitFor(File file) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (!file.exists()) {
      if (System.nanoTime() > deadline) throw new IllegalStateException("no " + file);
      Thread.sleep(50);
    }
  }

  /** Waits until Spark holds no executor, then until gate exists with none back. */
  private static void waitIdle(JavaSparkContext sc, File gate) throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    boolean idle = false;
    while (!idle || !gate.exists()) {
      // The driver's own block manager is one of them.
      boolean none = sc.sc().statusTracker().getExecutorInfos().length <= 1;
      if (idle && !none) throw new IllegalStateException("an executor came back without work");
      if (none && !idle) System.out.println("idle: no executors");
      idle = idle || none;
      if (System.nanoTime() > deadline) throw new IllegalStateException("idle too long: " + idle);
      Thread.sleep(50);
    }
    System.out.println("idle: none came back");
  }
}
