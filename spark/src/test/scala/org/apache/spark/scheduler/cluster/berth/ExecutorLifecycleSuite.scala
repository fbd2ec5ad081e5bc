package org.apache.spark.scheduler.cluster.berth

import scala.collection.mutable

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.{ExecutorExited, ExecutorLossReason, ExecutorProcessLost}

class ExecutorLifecycleSuite {
  private class Sink extends ExecutorSink {
    val removed = mutable.Buffer[(String, ExecutorLossReason)]()
    val decommissioned = mutable.Buffer[(String, String)]()
    val unregistered = mutable.Set[String]() // never registered with the driver
    val stderrShown = mutable.Buffer[Int]()
    var aborted: Option[String] = None
    override def remove(id: String, reason: ExecutorLossReason): Unit = removed += id -> reason
    override def decommission(id: String, why: String): Unit = decommissioned += id -> why
    override def registered(id: String): Boolean = !unregistered.contains(id)
    override def showStderr(id: Int): Unit = stderrShown += id
    override def abort(message: String, lastId: Int): Unit = aborted = Some(message)
  }

  /** An event about executor id, as berth's master sends it; more: the executor's fields. */
  private def event(kind: String, id: Int, state: String, more: String = "",
      message: String = "") =
    BerthClient.Json.readTree(s"""{"type":"$kind","message":"$message","executor":{"id":$id,
      "workerId":"w1","host":"10.0.0.1","cores":1,"memoryMB":896,"state":"$state"$more,
      "message":"$message"}}""")

  private def lifecycle(conf: SparkConf = new SparkConf(false), decommission: Boolean = true) = {
    val sink = new Sink
    (new ExecutorLifecycle(conf, sink, decommission), sink)
  }

  /** Whether Spark was told the app caused executor id's end. */
  private def causedByApp(sink: Sink, id: Int): Boolean =
    sink.removed.find(_._1 == id.toString).map(_._2) match {
      case Some(ExecutorExited(_, byApp, _)) => byApp
      case Some(ExecutorProcessLost(_, host, byApp)) =>
        assertEquals(s"executor $id's loss names a host", None, host)
        byApp
      case other => fail(s"executor $id: removed with $other"); false
    }

  @Test def anEndIsReportedOnceAndBlamesTheAppForItsOwnFailure(): Unit = {
    val (l, sink) = lifecycle()
    l.onEvent(event("executorAdded", 0, "LAUNCHING"))
    l.onEvent(event("executorUpdated", 0, "RUNNING"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1""", "exited with code 1"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1""", "exited with code 1"))
    assertEquals(1, sink.removed.size)
    sink.removed.head._2 match {
      case ExecutorExited(1, true, msg) =>
        assertEquals("berth: executor 0 on worker w1 ended FAILED, exit code 1, the app's " +
          "failure: exited with code 1", msg)
      case other => fail(s"got $other")
    }
    assertEquals(0, l.liveCount)
  }

  /** berth's cause says whose failure a FAILED executor is: only no cause is the app's. */
  @Test def aFailureIsTheAppsOnlyWithoutACause(): Unit = {
    val (l, sink) = lifecycle(new SparkConf(false).set("spark.executor.maxNumFailures", "4"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":137,"cause":"signal"""",
      "exited with code 137: killed by SIGKILL"))
    l.onEvent(event("executorUpdated", 1, "FAILED", ""","cause":"worker"""",
      "could not start: writing its resources file: disk full"))
    l.onEvent(event("executorUpdated", 2, "FAILED", ""","exitCode":137""",
      "killed: exceeded its memory limit of 896 MB"))
    l.onEvent(event("executorUpdated", 3, "FAILED", ""","exitCode":134""",
      "exited with code 134: killed by signal SIGABRT"))
    // The exit codes standalone forgives (56: heartbeat) are the app's own doing on berth.
    l.onEvent(event("executorUpdated", 4, "FAILED", ""","exitCode":56"""))
    assertEquals(Seq(false, false, true, true, true), (0 to 4).map(causedByApp(sink, _)))
    val signal = sink.removed.head._2.message
    assertTrue(signal, signal.contains("not the app's failure (a signal berth did not send)"))
    val memory = sink.removed(2)._2.message
    assertTrue(memory, memory.contains("raise spark.executor.memoryOverhead"))
    assertEquals(None, sink.aborted) // 3 failures of at most 4
  }

  @Test def whatBerthOrSparkTookIsNotTheApps(): Unit = {
    val (l, sink) = lifecycle()
    l.killRequested(Seq(1))
    l.onEvent(event("executorUpdated", 1, "KILLED", message = "killed by request"))
    l.onEvent(event("executorPreempted", 2, "RUNNING", message = "preempted for queue etl"))
    l.onEvent(event("executorUpdated", 2, "KILLED", ""","exitCode":143"""))
    l.onEvent(event("executorLost", 3, "LOST", message = "worker w1 lost"))
    l.onEvent(event("executorUpdated", 5, "EXITED", ""","exitCode":0"""))
    l.onEvent(event("executorUpdated", 6, "KILLED", message = "killed by request"))
    assertEquals(Seq("1", "2", "3", "5", "6"), sink.removed.map(_._1))
    assertFalse((Seq(1, 2, 3, 5, 6)).exists(causedByApp(sink, _)))
    assertTrue(sink.removed(2)._2.isInstanceOf[ExecutorProcessLost])
    assertEquals(Seq("2"), sink.decommissioned.map(_._1)) // at the preemption, in its grace
    assertEquals(None, sink.aborted)
  }

  @Test def aDrainDecommissionsTheExecutorWhenSparkMay(): Unit = {
    val drain = ""","drainDeadline":"2026-12-01T23:00:00Z""""
    val why = "worker w1 is being drained: executor 4 may run until 2026-12-01T23:00:00Z"
    val (l, sink) = lifecycle(decommission = true)
    l.onEvent(event("executorAdded", 4, "RUNNING"))
    l.onEvent(event("executorDraining", 4, "RUNNING", drain, why))
    assertEquals(Seq("4" -> why), sink.decommissioned)
    assertTrue(sink.removed.isEmpty) // it stays until it exits (or berth's deadline kills it)
    l.onEvent(event("executorUpdated", 4, "EXITED", ""","exitCode":0"""))
    assertFalse(causedByApp(sink, 4))

    val (off, offSink) = lifecycle(decommission = false)
    off.onEvent(event("executorAdded", 4, "RUNNING"))
    off.onEvent(event("executorDraining", 4, "RUNNING", drain, why))
    assertTrue(offSink.decommissioned.isEmpty) // berth kills it at the deadline: LOST
    off.onEvent(event("executorLost", 4, "LOST", message = "killed: worker w1's drain deadline passed"))
    assertFalse(causedByApp(offSink, 4))
  }

  @Test def aSnapshotEndsWhatTheNewLeaderNoLongerLists(): Unit = {
    val (l, sink) = lifecycle()
    l.onEvent(event("executorAdded", 0, "RUNNING"))
    l.onEvent(event("executorAdded", 1, "RUNNING"))
    l.onEvent(BerthClient.Json.readTree("""{"type":"snapshot","app":{"executors":[
      {"id":1,"workerId":"w2","cores":1,"memoryMB":896,"state":"RUNNING"}]}}"""))
    assertEquals(Seq("0"), sink.removed.map(_._1))
    assertTrue(sink.removed.head._2.isInstanceOf[ExecutorProcessLost])
    assertEquals(1, l.liveCount)
  }

  @Test def theAppsEndEndsWhatRanUntilItWithoutRemovingIt(): Unit = {
    val (l, sink) = lifecycle()
    l.onEvent(event("executorAdded", 0, "RUNNING"))
    l.onEvent(event("executorAdded", 1, "RUNNING"))
    l.onEvent(event("executorUpdated", 1, "FAILED", ""","exitCode":1"""))
    l.appEnded(BerthClient.Json.readTree("""{"state":"FINISHED","executors":[
      {"id":0,"workerId":"w1","state":"KILLED"},{"id":1,"workerId":"w1","state":"FAILED"}]}"""))
    assertEquals(0, l.liveCount)
    assertEquals(Seq("1"), sink.removed.map(_._1)) // 0 is Spark's to forget as it stops
  }

  @Test def theAppEndsPastMaxNumFailures(): Unit = {
    val (l, sink) = lifecycle(new SparkConf(false).set("spark.executor.maxNumFailures", "2"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1"""))
    l.onEvent(event("executorUpdated", 9, "FAILED", ""","exitCode":137,"cause":"signal""""))
    assertEquals(None, sink.aborted) // a signal from outside is not counted
    l.onEvent(event("executorUpdated", 1, "FAILED", ""","exitCode":1"""))
    assertTrue(sink.aborted.get, sink.aborted.get.contains("2 executors failed"))
  }

  /**
   * A worker without java or Spark: the launcher exits 127 (126) before any JVM, so before
   * the executor registers. That is the worker's lack, not the app's: with two such workers
   * among good ones, counting it spent spark.executor.maxNumFailures (here 1) and ended the
   * app. The same exit of an executor that registered (its JVM ran: the app's own exit),
   * and a JVM that would not start (exit 1: a bad option), are the app's.
   */
  @Test def aWorkerWithoutJavaOrSparkIsNotTheAppsFailure(): Unit = {
    val (l, sink) = lifecycle(new SparkConf(false).set("spark.executor.maxNumFailures", "1"))
    sink.unregistered ++= Seq("0", "1", "3")
    l.onEvent(event("executorAdded", 0, "LAUNCHING"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":127""",
      "exited with code 127: command not found"))
    l.onEvent(event("executorUpdated", 1, "FAILED", ""","exitCode":126""",
      "exited with code 126: command not executable"))
    assertEquals(Seq(false, false), Seq(0, 1).map(causedByApp(sink, _)))
    assertEquals(None, sink.aborted)
    val msg = sink.removed.head._2.message
    assertEquals("berth: executor 0 on worker w1 ended FAILED, exit code 127, not the app's " +
      "failure (this worker cannot start Spark executors: no java or no Spark there, its " +
      "launcher exited 127 before any JVM ran): exited with code 127: command not found", msg)
    assertEquals(Seq(0, 1), sink.stderrShown) // the launcher's "berth: no java at ..."

    l.onEvent(event("executorUpdated", 2, "FAILED", ""","exitCode":127"""))
    assertTrue(causedByApp(sink, 2)) // it registered: its JVM ran, and exited 127
    assertTrue(sink.aborted.get, sink.aborted.get.contains("1 executors failed"))

    val (bad, badSink) = lifecycle()
    badSink.unregistered += "3"
    bad.onEvent(event("executorUpdated", 3, "FAILED", ""","exitCode":1""", "exited with code 1"))
    assertTrue(causedByApp(badSink, 3))
    assertEquals(Seq(3), badSink.stderrShown)
  }

  @Test def aRemovalSparkMadeItselfIsNotRepeated(): Unit = {
    val (l, sink) = lifecycle()
    assertTrue(l.markRemoved("7"))
    assertFalse(l.markRemoved("7"))
    l.onEvent(event("executorUpdated", 7, "FAILED", ""","exitCode":1"""))
    assertTrue(sink.removed.isEmpty)
  }
}
