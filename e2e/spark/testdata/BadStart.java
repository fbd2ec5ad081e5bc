// Starts one SparkContext per case, each with its own settings over
// spark-submit's, and prints how each start ended and how long it took:
//   CASE NAME SECONDS started | CASE NAME SECONDS failed: EXCEPTION
// One JVM for every case: the e2e tests check that a bad setting fails
// SparkContext's start within seconds, saying what is wrong.
//   BadStart NAME 'key=value;key=value' [NAME SETTINGS]...
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;

public final class BadStart {
  public static void main(String[] args) {
    for (int i = 0; i + 1 < args.length; i += 2) {
      SparkConf conf = new SparkConf().setAppName("bad-start-" + args[i]);
      for (String kv : args[i + 1].split(";")) {
        int eq = kv.indexOf('=');
        if (eq > 0) conf.set(kv.substring(0, eq), kv.substring(eq + 1));
      }
      long start = System.nanoTime();
      String outcome;
      try {
        new SparkContext(conf).stop();
        outcome = "started";
      } catch (Throwable e) {
        outcome = "failed: " + e.toString().replace('\n', ' ');
      }
      System.out.printf("CASE %s %.1f %s%n", args[i], (System.nanoTime() - start) / 1e9, outcome);
    }
  }
}
