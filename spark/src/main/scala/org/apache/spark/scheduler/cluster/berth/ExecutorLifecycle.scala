/*
 * berth's Spark cluster manager: what becomes of the executors.
 */
package org.apache.spark.scheduler.cluster.berth

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.SparkConf
import org.apache.spark.deploy.ExecutorFailureTracker
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{ExecutorExited, ExecutorLossReason, ExecutorProcessLost}

/** One executor as berth's ExecutorStatus says. */
private[berth] case class BerthExecutor(
    id: Int,
    workerId: String,
    host: String,
    cores: Int,
    memoryMB: Int,
    state: String,
    exitCode: Option[Int],
    message: String,
    cause: String) {
  def finished: Boolean = Set("KILLED", "FAILED", "LOST", "EXITED").contains(state)
}

private[berth] object BerthExecutor {
  def apply(j: JsonNode): BerthExecutor = BerthExecutor(j.path("id").asInt(),
    j.path("workerId").asText(), j.path("host").asText(""), j.path("cores").asInt(),
    j.path("memoryMB").asInt(), j.path("state").asText(),
    Option(j.get("exitCode")).filter(_.isNumber).map(_.asInt()), j.path("message").asText(""),
    j.path("cause").asText(""))
}

/** What the lifecycle asks of the scheduler backend. */
private[berth] trait ExecutorSink {
  def remove(executorId: String, reason: ExecutorLossReason): Unit
  /** Spark's graceful end: blocks migrate (spark.storage.decommission.*), then it exits. */
  def decommission(executorId: String, why: String): Unit
  /** Whether the executor registered with the driver (then Spark has its logs and host). */
  def registered(executorId: String): Boolean
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
 *
 * Every end is logged once, as "berth: executor N on worker W ended STATE, the app's
 * failure|not the app's failure (why): berth's message": the e2e tests read these lines
 * against berth's own record of the app.
 */
private[berth] class ExecutorLifecycle(
    conf: SparkConf,
    sink: ExecutorSink,
    decommissionEnabled: Boolean) extends Logging {

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
        if (decommissionEnabled) sink.decommission(e.id.toString, note)
      case "executorDraining" =>
        val e = executor
        if (decommissionEnabled) {
          logInfo(s"berth: decommissioning executor ${e.id}: $note")
          sink.decommission(e.id.toString, note)
        } else {
          logInfo(s"berth: $note (set spark.decommission.enabled to move its blocks first)")
        }
      case "relaunchDelayed" =>
        logWarning(s"berth: this app's executors keep ending soon after they start: $note")
      case "masterChanged" =>
        logInfo(s"berth: the leader is now ${ev.path("leader").asText()} (epoch " +
          s"${ev.path("epoch").asLong()})")
      case "executorLimitChanged" => logDebug(s"berth: $note")
      case _ => // appRemoved is the backend's; newer event types are ignored
    }
  }

  /**
   * The app's final status (its unregistration's answer): the executors that ran until its
   * end are logged as ended, as berth recorded them, but not removed (Spark is stopping).
   */
  def appEnded(app: JsonNode): Unit = synchronized {
    app.path("executors").elements().asScala.map(BerthExecutor(_)).filter(_.finished)
      .filterNot(e => ended.contains(e.id)).foreach { e =>
        ended += e.id
        alive -= e.id
        logInfo(ExecutorLifecycle.endLine(e, appFailure = false, "with the app", e.message))
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
    val registered = sink.registered(id)
    val (reason, appFailure) = ExecutorLifecycle.lossReason(e, note, killedBySpark.contains(e.id),
      preempted.get(e.id), registered)
    val unstartable = ExecutorLifecycle.workerCannotStart(e, registered)
    if (appFailure || unstartable) logWarning(reason.message) else logInfo(reason.message)
    // One that died before it could register: its own words (or its launcher's: "berth: no
    // java at ...") are all there is to tell why.
    if ((appFailure || unstartable) && !registered) sink.showStderr(e.id)
    if (removed.add(e.id)) sink.remove(id, reason)
    if (appFailure) {
      failures.registerFailureOnHost(if (e.host.nonEmpty) e.host else e.workerId)
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
  /** The line logged for an executor's end, which is also the loss reason's message. */
  def endLine(e: BerthExecutor, appFailure: Boolean, why: String, what: String): String = {
    val blame = if (appFailure) "the app's failure" else s"not the app's failure ($why)"
    val exit = e.exitCode.map(c => s", exit code $c").getOrElse("")
    val said = if (what.nonEmpty) s": $what" else ""
    s"berth: executor ${e.id} on worker ${e.workerId} ended ${e.state}$exit, $blame$said"
  }

  /**
   * Whether the executor's launcher (BerthAppDescription.LauncherScript) found no java or no
   * Spark on its worker: FAILED with the launcher's exit (127, 126), before it registered, so
   * before any JVM of Spark's ran. A machine's lack, not the app's: counted against the app,
   * two such workers among good ones could spend spark.executor.maxNumFailures and end the
   * app while good workers remained. berth keeps the app off such a worker after two
   * failures there, and ends the app when every worker is so (--max-executor-retries).
   */
  def workerCannotStart(e: BerthExecutor, registered: Boolean): Boolean =
    e.state == "FAILED" && e.cause.isEmpty && !registered &&
      e.exitCode.exists(BerthAppDescription.LauncherExitCodes.contains)

  /**
   * Why an executor ended, and whether the app is to blame: only when berth says FAILED
   * with no cause (its exit code, its crash, its own memory limit), but for a launcher that
   * found no java or no Spark on the worker (workerCannotStart). A failure berth owes to
   * the worker (cause "worker": it could not prepare or start the process) or to a signal
   * no part of berth sent (cause "signal": a person's kill -9, the host's OOM killer), LOST
   * (its worker lost, its drain deadline passed), KILLED (Spark's kill, a preemption, an
   * operator) and a clean exit are not.
   *
   * A LOST executor names no host: in berth each executor serves its own shuffle files, and
   * several workers may share a host, so a host-wide loss (Spark unregisters every map
   * output there) would discard the good outputs of the others.
   */
  def lossReason(
      e: BerthExecutor,
      note: String,
      killedBySpark: Boolean,
      preemptedWhy: Option[String],
      registered: Boolean): (ExecutorLossReason, Boolean) = {
    val what = if (e.message.nonEmpty) e.message else note
    val code = e.exitCode.getOrElse(-1)
    def notApps(why: String, text: String = what) =
      (ExecutorExited(code, exitCausedByApp = false, endLine(e, appFailure = false, why, text)),
        false)
    (e.state, preemptedWhy) match {
      case (_, Some(why)) => notApps("preempted", why)
      case _ if killedBySpark => notApps("killed at Spark's request")
      case ("LOST", _) =>
        (ExecutorProcessLost(endLine(e, appFailure = false, "lost", what), None,
          causedByApp = false), false)
      case ("KILLED", _) => notApps("killed by berth")
      case ("EXITED", _) =>
        (ExecutorExited(e.exitCode.getOrElse(0), exitCausedByApp = false,
          endLine(e, appFailure = false, "exited", what)), false)
      case (_, None) if e.cause == "worker" => notApps("its worker could not start it")
      case (_, None) if e.cause == "signal" => notApps("a signal berth did not send")
      case (_, None) if e.cause.nonEmpty => notApps(s"cause ${e.cause}")
      case _ if workerCannotStart(e, registered) =>
        notApps(s"this worker cannot start Spark executors: no java or no Spark there, " +
          s"its launcher exited $code before any JVM ran", what)
      case _ =>
        val hint = if (what.contains("memory limit")) {
          " (raise spark.executor.memoryOverhead: berth's limit is heap + overhead)"
        } else ""
        (ExecutorExited(code, exitCausedByApp = true,
          endLine(e, appFailure = true, "", what + hint)), true)
    }
  }
}
