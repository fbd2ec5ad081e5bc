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

  /** Runs the launcher as a worker would, with exactly env, and returns what it printed. */
  private def launch(env: Map[String, String]): String = {
    val pb = new ProcessBuilder((BerthAppDescription.JavaLauncher ++ Seq("-Xmx1m", "a b")).asJava)
    pb.environment().clear()
    env.foreach { case (k, v) => pb.environment().put(k, v) }
    pb.redirectErrorStream(true)
    val p = pb.start()
    val out = new String(p.getInputStream.readAllBytes(), UTF_8).trim
    p.waitFor()
    out
  }

  @Test def theExecutorsJavaIsTheWorkersUnlessSet(): Unit = {
    val dir = Files.createTempDirectory("berth-java")
    fakeJava(dir.resolve("jdk/bin"), "java-home")
    fakeJava(dir.resolve("path"), "path")
    val path = dir.resolve("path").toString
    // The worker passes its JAVA_HOME (or the app's spark.executorEnv.JAVA_HOME wins).
    assertEquals("java-home -Xmx1m a b",
      launch(Map("JAVA_HOME" -> dir.resolve("jdk").toString, "PATH" -> path)))
    assertEquals("path -Xmx1m a b", launch(Map("PATH" -> path)))
    assertTrue(launch(Map("PATH" -> dir.toString)).contains("not found"))

    val default = command(new SparkConf(false))
    assertEquals(BerthAppDescription.JavaLauncher, default.take(4))
    val set = command(new SparkConf(false).set(BerthConf.EXECUTOR_JAVA.key, "/jdk/bin/java"))
    assertEquals(Seq("/jdk/bin/java", "-cp", "/opt/spark/conf:/opt/spark/jars/*"), set.take(3))
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
