"""PySpark pi for make demo: samples in TASKS tasks (each pausing a little,
so that the demo can kill berth's leader while they run), then a shuffle of
the samples by quarter of the square, then pi from their count.

    spark-submit --master spark+berth://HOST:PORT,... --jars bin/berth-spark.jar \\
        examples/spark/pi.py [TASKS] [SAMPLES_PER_TASK] [TASK_PAUSE_S]
"""
import random
import sys
import time

from pyspark.sql import SparkSession

tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 40
samples = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5

spark = SparkSession.builder.appName("pyspark-pi").getOrCreate()
sc = spark.sparkContext
print("applicationId", sc.applicationId, flush=True)


def sample(i):
    time.sleep(pause)
    rng = random.Random(i)
    for _ in range(samples):
        x, y = rng.random() * 2 - 1, rng.random() * 2 - 1
        yield (x >= 0, y >= 0), 1 if x * x + y * y <= 1 else 0


# A shuffle: the samples by quadrant, each quadrant's hits summed.
by_quadrant = sc.parallelize(range(tasks), tasks).flatMap(sample).reduceByKey(lambda a, b: a + b, 4).collect()
inside = sum(n for _, n in by_quadrant)
print("quadrants:", len(by_quadrant), flush=True)
print("Pi is roughly %f (%d samples in %d tasks)" % (4.0 * inside / (tasks * samples), tasks * samples, tasks), flush=True)
spark.stop()
