// A drain's block migration as a user sees it. Once two executors have
// registered, a cached RDD and a shuffle's map outputs are built on both
// (stages 0 and 1); a job then holds a task on each executor until the
// file GO exists (stage 2: the test drains a worker meanwhile); the driver
// waits until the file READ exists (the drained executor has handed its
// blocks over and exited) and reads the cache and the shuffle again. Each
// computation of a cached partition and of a map task is counted in an
// accumulator (a recomputation adds to it), with the executor it ran on.
// Prints the cached RDD's id and where each partition was built, the
// answers after the drain, what those reads computed again, and
// "Migrate OK".
//   Migrate TASKS TASK_SLEEP_MS GO READ
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.util.CollectionAccumulator;
import scala.Tuple2;

public final class Migrate {
  public static void main(String[] args) throws Exception {
    int tasks = Integer.parseInt(args[0]);
    long sleepMs = Long.parseLong(args[1]);
    String go = args[2];
    File read = new File(args[3]);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("berth-migrate"))) {
      waitExecutors(sc, 2);
      CollectionAccumulator<String> computed = sc.sc().collectionAccumulator("computed");
      List<Integer> slices = new ArrayList<>();
      for (int i = 0; i < tasks; i++) slices.add(i);
      JavaRDD<Integer> cached = sc.parallelize(slices, tasks).mapPartitionsWithIndex((p, it) -> {
        computed.add("cache " + p + "@" + SparkEnv.get().executorId());
        Thread.sleep(sleepMs);
        List<Integer> out = new ArrayList<>();
        for (int k = 0; k < 1000; k++) out.add(p * 1000 + k);
        return out.iterator();
      }, false).persist(StorageLevel.MEMORY_ONLY());
      JavaPairRDD<Integer, Long> byDigit = cached.mapPartitionsWithIndex((p, it) -> {
        computed.add("map " + p + "@" + SparkEnv.get().executorId());
        List<Tuple2<Integer, Long>> out = new ArrayList<>();
        while (it.hasNext()) out.add(new Tuple2<>(it.next() % 10, 1L));
        return out.iterator();
      }, false).mapToPair(t -> t).reduceByKey(Long::sum, 2);

      String first = shuffled(byDigit);
      List<String> built = new ArrayList<>(computed.value());
      built.sort(null);
      System.out.println("built rdd " + cached.id() + ": " + String.join(", ", built) + "; " + first);

      sc.parallelize(Arrays.asList(0, 1), 2).foreach(i -> waitFor(new File(go)));
      System.out.println("held tasks done");
      waitFor(read);

      int before = computed.value().size();
      long count = cached.count();
      String again = shuffled(byDigit);
      List<String> more = new ArrayList<>(computed.value());
      more = more.subList(before, more.size());
      System.out.println("after the drain: cached count " + count + ", " + again + "; computed again: "
          + (more.isEmpty() ? "none" : String.join(", ", more)));
      String want = "shuffle: 10 keys, " + (long) tasks * 1000 + " values";
      if (!first.equals(want) || !again.equals(want) || count != (long) tasks * 1000) {
        throw new IllegalStateException("wrong result");
      }
      System.out.println("Migrate OK");
    }
  }

  /** Reads the shuffle's output: its keys and the values counted. */
  private static String shuffled(JavaPairRDD<Integer, Long> byDigit) {
    Map<Integer, Long> counts = byDigit.collectAsMap();
    long total = 0;
    for (long n : counts.values()) total += n;
    return "shuffle: " + counts.size() + " keys, " + total + " values";
  }

  /** Waits (polling, with a deadline) until n executors have registered. */
  private static void waitExecutors(JavaSparkContext sc, int n) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    // The driver's own block manager is one of them.
    while (sc.sc().statusTracker().getExecutorInfos().length < n + 1) {
      if (System.nanoTime() > deadline) throw new IllegalStateException("fewer than " + n + " executors");
      Thread.sleep(50);
    }
  }

  /** Waits (in a task or the driver, polling, with a deadline) until file exists. */
  private static void waitFor(File file) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (!file.exists()) {
      if (System.nanoTime() > deadline) throw new IllegalStateException("no " + file);
      Thread.sleep(50);
    }
  }
}
