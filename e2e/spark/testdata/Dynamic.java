// Dynamic allocation's round trip: a job that brings executors, a wait
// (polled, with a deadline) until Spark has released them all for their
// idleness, 3 s more idle in which none may come back, then a second job
// that brings new ones. Prints each job's answer and "Dynamic OK".
//   Dynamic TASKS TASK_SLEEP_MS
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public final class Dynamic {
  public static void main(String[] args) throws Exception {
    int tasks = Integer.parseInt(args[0]);
    long sleepMs = Long.parseLong(args[1]);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("berth-dynamic"))) {
      List<Integer> slices = new ArrayList<>();
      for (int i = 0; i < tasks; i++) slices.add(i);
      for (int round = 1; round <= 2; round++) {
        long sum = sc.parallelize(slices, tasks).map(i -> {
          Thread.sleep(sleepMs);
          return (long) i;
        }).reduce(Long::sum);
        System.out.println("round " + round + ": sum " + sum);
        if (sum != (long) tasks * (tasks - 1) / 2) throw new IllegalStateException("wrong sum");
        if (round == 1) {
          long deadline = System.nanoTime() + 60_000_000_000L;
          // The driver's own block manager is one of them.
          while (sc.sc().statusTracker().getExecutorInfos().length > 1) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("executors kept while idle");
            Thread.sleep(100);
          }
          System.out.println("idle: no executors");
          // Idle a while longer: none may come back without work.
          long idleUntil = System.nanoTime() + 3_000_000_000L;
          while (System.nanoTime() < idleUntil) {
            if (sc.sc().statusTracker().getExecutorInfos().length > 1) {
              throw new IllegalStateException("an executor came back without work");
            }
            Thread.sleep(100);
          }
          System.out.println("idle: none came back");
        }
      }
      System.out.println("Dynamic OK");
    }
  }
}
