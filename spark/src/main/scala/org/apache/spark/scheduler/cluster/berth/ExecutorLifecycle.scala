/*
 * berth's Spark cluster manager: what becomes of the executors.
 */
package org.apache.spark.scheduler.cluster.berth

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.SparkConf
import org.apache.spark.deploy.ExecutorFailureTracker
import org.apache.spark.executor.ExecutorExitCode
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{ExecutorExited, ExecutorLossReason, ExecutorProcessLost}

/** One executor as berth's ExecutorStatus says. */
private[berth] case class BerthExecutor(
    id: Int,
    workerId: String,
    cores: Int,
    memoryMB: Int,
    state: String,
    exitCode: Option[Int],
    message: String) {
  def finished: Boolean = Set("KILLED", "FAILED", "LOST", "EXITED").contains(state)
}

private[berth] object BerthExecutor {
  def apply(j: JsonNode): BerthExecutor = BerthExecutor(j.path("id").asInt(),
    j.path("workerId").asText(), j.path("cores").asInt(), j.path("memoryMB").asInt(),
    j.path("state").asText(), Option(j.get("exitCode")).filter(_.isNumber).map(_.asInt()),
    j.path("message").asText(""))
}

/** What the lifecycle asks of the scheduler backend. */
private[berth] trait ExecutorSink {
  def remove(executorId: String, reason: ExecutorLossReason): Unit
  def decommission(executorId: String, why: String, host: Option[String]): Unit
  /** The host an executor registered from, if it did. */
  def hostOf(executorId: String): Option[String]
  /** Logs the end of an executor's stderr: why one died before it registered. */
  def showStderr(executorId: Int): Unit
  /** Ends the app: its executors fail for a reason no retry will mend (the last: lastId). */
  def abort(message: String, lastId: Int): Unit
}
// The sink's calls that take Spark's locks (decommission, abort) or wait on berth
// (showStderr) return at once and do their work on another thread: the lifecycle holds its
// own lock while it calls them, and Spark calls killRequested holding the scheduler's.

/**
 * Turns berth's executor events into Spark's executor removals, as Kubernetes'
 * ExecutorPodsLifecycleManager does with pod states: every executor that ends is removed
 * from Spark once, however many events (or snapshots after a failover) say so, with a loss
 * reason that blames the app only for the app's own failures. Those failures are counted,
 * as YARN and Kubernetes count them (spark.executor.maxNumFailures within
 * spark.executor.failuresValidityInterval), and past the bound the app is ended instead of
 * waiting for ever for executors that cannot start.
 */
private[berth] class ExecutorLifecycle(
    conf: SparkConf,
    sink: ExecutorSink,
    decommissionOnPreemption: Boolean) extends Logging {

  private val alive = mutable.Map[Int, BerthExecutor]()
  private val ended = mutable.Set[Int]() // berth said it ended; ids are never reused
  private val removed = mutable.Set[Int]() // Spark was told
  private val killedBySpark = java.util.concurrent.ConcurrentHashMap.newKeySet[Int]()
  private val preempted = mutable.Map[Int, String]()
  private val failures = new ExecutorFailureTracker(conf)
  private val maxFailures = ExecutorFailureTracker.maxNumExecutorFailures(conf)

  /** Spark asked berth to kill these: their end is no failure of the app's. */
  def killRequested(ids: Seq[Int]): Unit = ids.foreach(killedBySpark.add)

  /** Whether Spark is yet to be told that this executor is gone (and now will be). */
  def markRemoved(executorId: String): Boolean = synchronized {
    executorId.toIntOption.exists(removed.add)
  }

  def liveCount: Int = synchronized { alive.size }

  def onEvent(ev: JsonNode): Unit = synchronized {
    val note = ev.path("message").asText("")
    def executor = BerthExecutor(ev.path("executor"))
    ev.path("type").asText() match {
      case "snapshot" => snapshot(ev.path("app"))
      case "executorAdded" | "executorUpdated" | "executorLost" | "executorHealthy" |
           "executorUnhealthy" =>
        update(executor, note)
      case "executorPreempted" =>
        val e = executor
        preempted(e.id) = note
        logWarning(s"berth: executor ${e.id} on worker ${e.workerId} is being taken back: $note")
        // Within berth's preemption grace the executor can hand its blocks over.
        val id = e.id.toString
        if (decommissionOnPreemption) sink.decommission(id, note, sink.hostOf(id))
      case "relaunchDelayed" =>
        logWarning(s"berth: this app's executors keep ending soon after they start: $note")
      case "masterChanged" =>
        logInfo(s"berth: the leader is now ${ev.path("leader").asText()} (epoch " +
          s"${ev.path("epoch").asLong()})")
      case "executorLimitChanged" => logDebug(s"berth: $note")
      case _ => // appRemoved is the backend's; newer event types are ignored
    }
  }

  private def update(e: BerthExecutor, note: String): Unit =
    if (e.finished) end(e, note)
    else if (!ended.contains(e.id)) {
      if (alive.put(e.id, e).isEmpty) {
        logInfo(s"berth: granted executor ${e.id} on worker ${e.workerId} with ${e.cores} " +
          s"core(s), ${e.memoryMB} MB")
      }
    }

  /**
   * The app as a (new) leader knows it: an executor we hold that it does not list ended
   * while no master was looking (its worker was lost with the old leader's last word).
   */
  private def snapshot(app: JsonNode): Unit = {
    val listed = app.path("executors").elements().asScala.map(BerthExecutor(_)).toSeq
    listed.foreach(update(_, ""))
    val gone = alive.keySet.toSet -- listed.map(_.id)
    gone.toSeq.sorted.foreach { id =>
      end(alive(id).copy(state = "LOST", exitCode = None),
        "berth's leader no longer lists it (its worker was lost during a failover)")
    }
  }

  private def end(e: BerthExecutor, note: String): Unit = if (ended.add(e.id)) {
    alive -= e.id
    val id = e.id.toString
    val host = sink.hostOf(id)
    val (reason, appFailure) = ExecutorLifecycle.lossReason(e, note, killedBySpark.contains(e.id),
      preempted.get(e.id), host)
    if (appFailure) logWarning(reason.message) else logInfo(reason.message)
    // One that died before it could register: its own words are all there is to tell why.
    if (appFailure && host.isEmpty) sink.showStderr(e.id)
    if (removed.add(e.id)) sink.remove(id, reason)
    if (appFailure) {
      failures.registerFailureOnHost(host.getOrElse(e.workerId))
      val n = failures.numFailedExecutors
      if (n >= maxFailures) {
        sink.abort(s"$n executors failed, the most allowed (${maxFailures}, " +
          s"spark.executor.maxNumFailures); the last: ${reason.message}", e.id)
      } else {
        logWarning(s"berth: $n executor failure(s) of at most $maxFailures")
      }
    }
  }
}

private[berth] object ExecutorLifecycle {
  /** Exit codes Spark standalone does not blame on the app: the machine's trouble. */
  private val notTheApps = Set(ExecutorExitCode.HEARTBEAT_FAILURE,
    ExecutorExitCode.BLOCK_MANAGER_REREGISTRATION_FAILED,
    ExecutorExitCode.DISK_STORE_FAILED_TO_CREATE_DIR)

  /**
   * Why an executor ended, and whether the app is to blame. Only berth's FAILED with an
   * exit code of the app's own is: LOST (its worker was lost, or drained past its deadline),
   * KILLED (at Spark's request, by an operator, preempted for another queue), a clean exit
   * and the machine's exit codes are not. berth's states cannot tell a kill -9 by a person,
   * or an OOM killer outside the executor's cgroup, from the app's own crash: those count as
   * the app's, as on Spark standalone (NOTES.md, "API needs").
   */
  def lossReason(
      e: BerthExecutor,
      note: String,
      killedBySpark: Boolean,
      preemptedWhy: Option[String],
      host: Option[String]): (ExecutorLossReason, Boolean) = {
    val what = if (e.message.nonEmpty) e.message else note
    val where = s"berth: executor ${e.id} on worker ${e.workerId}"
    val code = e.exitCode.getOrElse(-1)
    (e.state, preemptedWhy) match {
      case (_, Some(why)) =>
        (ExecutorExited(code, exitCausedByApp = false, s"$where was preempted: $why"), false)
      case (_, None) if killedBySpark =>
        (ExecutorExited(code, exitCausedByApp = false, s"$where was killed at Spark's request"),
          false)
      case ("LOST", _) =>
        (ExecutorProcessLost(s"$where was lost: $what", host, causedByApp = false), false)
      case ("KILLED", _) =>
        (ExecutorExited(code, exitCausedByApp = false, s"$where was killed by berth: $what"), false)
      case ("EXITED", _) =>
        (ExecutorExited(e.exitCode.getOrElse(0), exitCausedByApp = false, s"$where exited: $what"),
          false)
      case _ if notTheApps.contains(code) =>
        (ExecutorExited(code, exitCausedByApp = false, s"$where failed: $what"), false)
      case _ =>
        val hint = if (what.contains("memory limit")) {
          " (raise spark.executor.memoryOverhead: berth's limit is heap + overhead)"
        } else ""
        (ExecutorExited(code, exitCausedByApp = true, s"$where failed: $what$hint"), true)
    }
  }
}
