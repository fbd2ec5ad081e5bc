package org.apache.spark.scheduler.cluster.berth

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.nio.file.attribute.PosixFilePermissions

import scala.jdk.CollectionConverters._

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.SparkConf

class BerthAppDescriptionSuite {
  private val shape = BerthAppDescription.Shape(896, 512, Some(1), Map.empty)

  private def command(conf: SparkConf, s: BerthAppDescription.Shape = shape) =
    BerthAppDescription.command(conf, "/opt/spark", "spark://CoarseGrainedScheduler@d:1", s)

  /** A fake java at dir/name that prints its tag and arguments. */
  private def fakeJava(dir: Path, tag: String): Unit = {
    Files.createDirectories(dir)
    val f = dir.resolve("java")
    Files.write(f, s"#!/bin/sh\necho $tag \"$$@\"\n".getBytes(UTF_8))
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rwxr-xr-x"))
  }

  /** What a launch printed (stdout and stderr) and how it exited. */
  private case class Launch(out: String, code: Int)

  /**
   * Runs the launcher as a worker would, with exactly env, Spark at home and the java asked
   * for (spark.berth.executor.java), and returns what it printed.
   */
  private def launch(env: Map[String, String], home: String, java: Option[String] = None) = {
    val argv = BerthAppDescription.launcher(home, java) ++ Seq("-Xmx1m", "a b")
    val pb = new ProcessBuilder(argv.asJava)
    pb.environment().clear()
    env.foreach { case (k, v) => pb.environment().put(k, v) }
    pb.redirectErrorStream(true)
    val p = pb.start()
    val out = new String(p.getInputStream.readAllBytes(), UTF_8).trim
    Launch(out, p.waitFor())
  }

  @Test def theExecutorsJavaIsTheWorkersUnlessSet(): Unit = {
    val dir = Files.createTempDirectory("berth-java")
    val spark = Files.createDirectories(dir.resolve("spark/jars")).getParent.toString
    fakeJava(dir.resolve("jdk/bin"), "java-home")
    fakeJava(dir.resolve("path"), "path")
    fakeJava(dir.resolve("own/bin"), "own")
    val path = dir.resolve("path").toString
    // The worker passes its JAVA_HOME (or the app's spark.executorEnv.JAVA_HOME wins).
    assertEquals(Launch("java-home -Xmx1m a b", 0),
      launch(Map("JAVA_HOME" -> dir.resolve("jdk").toString, "PATH" -> path), spark))
    assertEquals(Launch("path -Xmx1m a b", 0), launch(Map("PATH" -> path), spark))
    // spark.berth.executor.java wins over both.
    assertEquals(Launch("own -Xmx1m a b", 0), launch(Map("JAVA_HOME" -> dir.resolve("jdk")
      .toString, "PATH" -> path), spark, Some(dir.resolve("own/bin/java").toString)))

    val default = command(new SparkConf(false))
    assertEquals(BerthAppDescription.launcher("/opt/spark", None), default.take(6))
    assertEquals(Seq("-cp", "/opt/spark/conf:/opt/spark/jars/*"), default.slice(6, 8))
    val set = command(new SparkConf(false).set(BerthConf.EXECUTOR_JAVA.key, "/jdk/bin/java"))
    assertEquals(BerthAppDescription.launcher("/opt/spark", Some("/jdk/bin/java")), set.take(6))
  }

  /**
   * A worker without java or Spark: the launcher says which, and exits 127 (126: a java that
   * is not executable) before any JVM: ExecutorLifecycle blames the worker, not the app.
   */
  @Test def theLauncherSaysWhatTheWorkerLacks(): Unit = {
    val dir = Files.createTempDirectory("berth-java")
    val spark = Files.createDirectories(dir.resolve("spark/jars")).getParent.toString
    fakeJava(dir.resolve("path"), "path")
    val empty = Files.createDirectories(dir.resolve("empty")).toString
    val none = launch(Map("PATH" -> empty), spark)
    assertEquals(none.out, 127, none.code)
    assertEquals(s"berth: no java on this worker: no JAVA_HOME, and none in its PATH $empty",
      none.out)
    val home = launch(Map("JAVA_HOME" -> empty, "PATH" -> dir.resolve("path").toString), spark)
    assertEquals(Launch(s"berth: no java at $empty/bin/java on this worker", 127), home)
    val named = launch(Map("PATH" -> dir.resolve("path").toString), spark, Some("/no/java"))
    assertEquals(Launch("berth: no java at /no/java on this worker", 127), named)
    val plain = dir.resolve("plain")
    Files.write(plain, "not a program".getBytes(UTF_8))
    val notExec = launch(Map("PATH" -> empty), spark, Some(plain.toString))
    assertEquals(Launch(s"berth: no java at $plain on this worker: it is not executable", 126),
      notExec)
    val noSpark = launch(Map("PATH" -> dir.resolve("path").toString), empty)
    assertEquals(Launch(s"berth: no Spark at $empty on this worker: no $empty/jars", 127),
      noSpark)
    for (l <- Seq(none, home, named, notExec, noSpark)) {
      assertTrue(l.toString, BerthAppDescription.LauncherExitCodes.contains(l.code))
    }
  }

  @Test def theCommandNamesWhatTheWorkerFillsIn(): Unit = {
    val plain = command(new SparkConf(false))
    for (p <- Seq("{{EXECUTOR_ID}}", "{{HOSTNAME}}", "{{CORES}}", "{{APP_ID}}")) {
      assertTrue(s"$p in $plain", plain.contains(p))
    }
    assertFalse(plain.contains("--resourcesFile"))
    val gpu = command(new SparkConf(false), shape.copy(custom = Map("gpu" -> 1L)))
    assertEquals(Seq("--resourcesFile", "{{RESOURCES}}"), gpu.takeRight(2))
  }

  @Test def executorsFetchShuffleFilesUnlessTheAppLetsThemReadEachOthersDisks(): Unit = {
    assertTrue(command(new SparkConf(false)).contains("-Dspark.shuffle.readHostLocalDisk=false"))
    for (v <- Seq("true", "false")) {
      val set = command(new SparkConf(false).set("spark.shuffle.readHostLocalDisk", v))
      assertFalse(set.mkString(" "), set.exists(_.startsWith("-Dspark.shuffle.readHostLocalDisk")))
    }
  }

  @Test def eachExecutorGetsItsOwnLogLinks(): Unit = {
    assertEquals(Map(
      "SPARK_LOG_URL_STDOUT" -> "https://m1:7077/ui/logs?app={{APP_ID}}&executor={{EXECUTOR_ID}}&stream=stdout",
      "SPARK_LOG_URL_STDERR" -> "https://m1:7077/ui/logs?app={{APP_ID}}&executor={{EXECUTOR_ID}}&stream=stderr"),
      BerthAppDescription.logUrls("https://m1:7077"))
    assertTrue(BerthAppDescription.LocalDirs.startsWith("{{HOME}}/"))
  }
}
