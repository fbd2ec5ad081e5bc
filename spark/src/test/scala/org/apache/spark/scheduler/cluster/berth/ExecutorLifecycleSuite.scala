package org.apache.spark.scheduler.cluster.berth

import scala.collection.mutable

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.{ExecutorExited, ExecutorLossReason, ExecutorProcessLost}

class ExecutorLifecycleSuite {
  private class Sink extends ExecutorSink {
    val removed = mutable.Buffer[(String, ExecutorLossReason)]()
    val decommissioned = mutable.Buffer[String]()
    var aborted: Option[String] = None
    override def remove(id: String, reason: ExecutorLossReason): Unit = removed += id -> reason
    override def decommission(id: String, why: String, host: Option[String]): Unit =
      decommissioned += id
    override def hostOf(id: String): Option[String] = Some("h" + id)
    override def showStderr(id: Int): Unit = ()
    override def abort(message: String, lastId: Int): Unit = aborted = Some(message)
  }

  private def event(kind: String, id: Int, state: String, exit: String = "", message: String = "") =
    BerthClient.Json.readTree(s"""{"type":"$kind","message":"$message","executor":{"id":$id,
      "workerId":"w1","cores":1,"memoryMB":896,"state":"$state"$exit,"message":"$message"}}""")

  private def lifecycle(conf: SparkConf = new SparkConf(false)) = {
    val sink = new Sink
    (new ExecutorLifecycle(conf, sink, decommissionOnPreemption = true), sink)
  }

  @Test def anEndIsReportedOnceAndBlamesTheAppForItsOwnFailure(): Unit = {
    val (l, sink) = lifecycle()
    l.onEvent(event("executorAdded", 0, "LAUNCHING"))
    l.onEvent(event("executorUpdated", 0, "RUNNING"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1""", "exited with code 1"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1""", "exited with code 1"))
    assertEquals(1, sink.removed.size)
    sink.removed.head._2 match {
      case ExecutorExited(1, true, msg) => assertTrue(msg, msg.contains("exited with code 1"))
      case other => fail(s"got $other")
    }
    assertEquals(0, l.liveCount)
  }

  @Test def whatBerthOrTheMachineTookIsNotTheApps(): Unit = {
    val (l, sink) = lifecycle()
    l.killRequested(Seq(1))
    l.onEvent(event("executorUpdated", 1, "KILLED"))
    l.onEvent(event("executorPreempted", 2, "RUNNING", message = "for queue etl"))
    l.onEvent(event("executorUpdated", 2, "KILLED", ""","exitCode":143"""))
    l.onEvent(event("executorLost", 3, "LOST", message = "worker w1 lost"))
    l.onEvent(event("executorUpdated", 4, "FAILED", ""","exitCode":56"""))
    l.onEvent(event("executorUpdated", 5, "EXITED", ""","exitCode":0"""))
    assertEquals(Seq("1", "2", "3", "4", "5"), sink.removed.map(_._1))
    sink.removed.map(_._2).foreach {
      case ExecutorExited(_, causedByApp, _) => assertFalse(causedByApp)
      case ExecutorProcessLost(_, host, causedByApp) =>
        assertFalse(causedByApp)
        assertEquals(Some("h3"), host)
      case other => fail(s"got $other")
    }
    assertEquals(Seq("2"), sink.decommissioned)
    assertEquals(None, sink.aborted)
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

  @Test def theAppEndsPastMaxNumFailures(): Unit = {
    val (l, sink) = lifecycle(new SparkConf(false).set("spark.executor.maxNumFailures", "2"))
    l.onEvent(event("executorUpdated", 0, "FAILED", ""","exitCode":1"""))
    assertEquals(None, sink.aborted)
    l.onEvent(event("executorUpdated", 1, "FAILED", ""","exitCode":1"""))
    assertTrue(sink.aborted.get, sink.aborted.get.contains("2 executors failed"))
  }

  @Test def aRemovalSparkMadeItselfIsNotRepeated(): Unit = {
    val (l, sink) = lifecycle()
    assertTrue(l.markRemoved("7"))
    assertFalse(l.markRemoved("7"))
    l.onEvent(event("executorUpdated", 7, "FAILED", ""","exitCode":1"""))
    assertTrue(sink.removed.isEmpty)
  }
}
