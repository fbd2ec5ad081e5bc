"""A PySpark job for berth's plugin: a shuffle over a cached RDD read twice,
with Python workers on the executors, then a DataFrame group-by.

From plain python3 (pyspark importable: scripts/spark-deps.sh installs it in
.deps/spark/venv), MASTER says where to go and the plugin comes from
BERTH_SPARK_JAR (default bin/berth-spark.jar), as spark.jars, and executors
get EXECUTOR_MEMORY (default 512m):

    MASTER=spark+berth://127.0.0.61:17077 python3 examples/spark/shuffle_cache.py [TASKS] [TASK_SLEEP_S]

Under spark-submit (--master, --jars) neither is needed. When the app asks
for GPUs (spark.task.resource.gpu.amount), it prints what each task got from
Spark beside what berth gave its executor (CUDA_VISIBLE_DEVICES).
"""
import os
import sys
import time

from pyspark import TaskContext
from pyspark.sql import SparkSession

here = os.path.dirname(os.path.abspath(__file__))
tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 8
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0

builder = SparkSession.builder.appName("berth-pyspark")
if os.environ.get("MASTER"):
    jar = os.environ.get("BERTH_SPARK_JAR", os.path.join(here, "..", "..", "bin", "berth-spark.jar"))
    builder = (builder.master(os.environ["MASTER"]).config("spark.jars", os.path.abspath(jar))
               .config("spark.executor.memory", os.environ.get("EXECUTOR_MEMORY", "512m")))
spark = builder.getOrCreate()
sc = spark.sparkContext
print("applicationId", sc.applicationId)


def expand(i):
    time.sleep(pause)
    return range(i * 1000, (i + 1) * 1000)


numbers = sc.parallelize(range(tasks), tasks).flatMap(expand).cache()
by_digit = dict(numbers.map(lambda n: (n % 10, 1)).reduceByKey(lambda a, b: a + b, 4).collect())
total = numbers.count()  # read back from the cache
print("shuffle:", sorted(by_digit.items()), "cached count", total)
assert len(by_digit) == 10 and sum(by_digit.values()) == tasks * 1000 == total
df = spark.createDataFrame([(i % 3, i) for i in range(100)], ["k", "v"])
print("sql:", sorted((r.k, r.s) for r in df.groupBy("k").sum("v").withColumnRenamed("sum(v)", "s").collect()))

if sc.getConf().get("spark.task.resource.gpu.amount"):
    def gpus(_):
        return (",".join(TaskContext.get().resources()["gpu"].addresses), os.environ.get("CUDA_VISIBLE_DEVICES"))
    print("gpu (spark, berth):", sorted(set(sc.parallelize(range(tasks), tasks).map(gpus).collect())))
print("berth-pyspark OK")
spark.stop()
