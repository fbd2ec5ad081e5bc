// A small Spark job for berth's plugin: Pi by sampling, then a shuffle over a
// cached RDD that is read twice. Each task can sleep, so that a test has time
// to kill an executor while the job runs.
//
//   examples/spark/run-java.sh [TASKS] [TASK_SLEEP_MS]
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

public final class BerthShuffle {
  public static void main(String[] args) throws Exception {
    int tasks = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    long sleepMs = args.length > 1 ? Long.parseLong(args[1]) : 0;
    SparkConf conf = new SparkConf().setAppName("berth-shuffle");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      System.out.println("applicationId " + sc.sc().applicationId());
      List<Integer> slices = new ArrayList<>();
      for (int i = 0; i < tasks; i++) slices.add(i);

      int samples = 200_000;
      long inside = sc.parallelize(slices, tasks).map(i -> {
        Thread.sleep(sleepMs);
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long n = 0;
        for (int k = 0; k < samples; k++) {
          double x = r.nextDouble() * 2 - 1, y = r.nextDouble() * 2 - 1;
          if (x * x + y * y <= 1) n++;
        }
        return n;
      }).reduce(Long::sum);
      System.out.printf("Pi is roughly %.5f%n", 4.0 * inside / ((long) samples * tasks));

      // A shuffle (reduceByKey) over a cached RDD: the second action reads the cache.
      JavaRDD<Integer> numbers = sc.parallelize(slices, tasks).flatMap(i -> {
        Thread.sleep(sleepMs);
        List<Integer> out = new ArrayList<>();
        for (int k = 0; k < 10_000; k++) out.add(i * 10_000 + k);
        return out.iterator();
      }).cache();
      JavaPairRDD<Integer, Long> byDigit = numbers
          .mapToPair(n -> new Tuple2<>(n % 10, 1L))
          .reduceByKey(Long::sum, Math.max(2, tasks / 2));
      long keys = byDigit.count();
      long total = byDigit.values().reduce(Long::sum);
      long cached = numbers.count();
      System.out.println("shuffle: " + keys + " keys, " + total + " values; cached count " + cached);
      if (keys != 10 || total != (long) tasks * 10_000 || cached != total) {
        throw new IllegalStateException("wrong result");
      }
      System.out.println("BerthShuffle OK");
    }
  }
}
