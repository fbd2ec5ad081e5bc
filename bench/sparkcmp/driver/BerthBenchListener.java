import java.util.HashMap;
import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;

/**
 * Prints every executor the driver registers or removes, with the time
 * Spark stamped on the event (when the driver's scheduler backend took the
 * registration, not when this listener ran), for berthbench to read from
 * stdout. Registered through spark.extraListeners, so that it is on the
 * bus before the scheduler backend starts and misses no executor.
 */
public final class BerthBenchListener extends SparkListener {
  /** What every line berthbench reads starts with; Spark logs to stderr. */
  static final String PREFIX = "BERTHBENCH ";

  private static volatile BerthBenchListener instance;

  /** Live executors: id to cores. Guarded by this. */
  private final Map<String, Integer> live = new HashMap<>();

  public BerthBenchListener() {
    instance = this;
  }

  /** The listener Spark made from spark.extraListeners, or null. */
  static BerthBenchListener instance() {
    return instance;
  }

  /** Prints one line: the kind, the time in epoch ms, then fields. */
  static void say(String kind, long atMs, Object... fields) {
    StringBuilder b = new StringBuilder(PREFIX).append(kind).append(' ').append(atMs);
    for (Object f : fields) {
      // One field per word: berthbench splits on blanks, and a reason is last.
      b.append(' ').append(String.valueOf(f).replaceAll("\\s+", "_"));
    }
    synchronized (System.out) {
      System.out.println(b);
      System.out.flush();
    }
  }

  @Override
  public synchronized void onExecutorAdded(SparkListenerExecutorAdded e) {
    int cores = e.executorInfo().totalCores();
    live.put(e.executorId(), cores);
    say("added", e.time(), e.executorId(), cores, e.executorInfo().executorHost());
    notifyAll();
  }

  @Override
  public synchronized void onExecutorRemoved(SparkListenerExecutorRemoved e) {
    live.remove(e.executorId());
    say("removed", e.time(), e.executorId(), e.reason());
    notifyAll();
  }

  /**
   * Waits until at least n executors with at least cores cores in all are
   * registered; false if the deadline (epoch ms) passes or the context
   * stops first (an app its cluster manager gave up on).
   */
  synchronized boolean awaitExecutors(int n, int cores, long deadlineMs, SparkContext sc)
      throws InterruptedException {
    while (live.size() < n || liveCores() < cores) {
      long left = deadlineMs - System.currentTimeMillis();
      if (left <= 0 || sc.isStopped()) {
        return false;
      }
      // Bounded, so that a stopped context is seen without an event.
      wait(Math.min(left, 200));
    }
    return true;
  }

  synchronized int liveCount() {
    return live.size();
  }

  synchronized int liveCores() {
    int sum = 0;
    for (int c : live.values()) {
      sum += c;
    }
    return sum;
  }
}
