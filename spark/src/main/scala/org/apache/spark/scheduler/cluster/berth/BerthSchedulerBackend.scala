/*
 * berth's Spark cluster manager: the scheduler backend.
 */
package org.apache.spark.scheduler.cluster.berth

import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean

import scala.concurrent.{ExecutionContext, Future}
import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.{SparkContext, SparkException}
import org.apache.spark.internal.config._
import org.apache.spark.resource.ResourceProfile
import org.apache.spark.rpc.{RpcAddress, RpcCallContext, RpcEndpointAddress}
import org.apache.spark.scheduler.{ExecutorDecommissionInfo, ExecutorLossReason,
  ExecutorProcessLost, TaskSchedulerImpl}
import org.apache.spark.scheduler.cluster.{CoarseGrainedSchedulerBackend, SchedulerBackendUtils}
import org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages.{RegisterExecutor,
  RemoveExecutor}
import org.apache.spark.util.{ThreadUtils, Utils}

/**
 * Runs a SparkContext's executors as a berth app, as StandaloneSchedulerBackend does on a
 * Spark master and KubernetesClusterSchedulerBackend with pods: start() registers the app
 * (its executors' command is CoarseGrainedExecutorBackend's java line) and follows its event
 * stream, which is the app's lease; executors register with the driver themselves, and
 * berth's word on each one's end removes it (ExecutorLifecycle). Spark's executor target
 * is berth's executor limit, Spark's kills berth's kill-executors, and berth's app id is the
 * application id, so the two UIs name the app alike.
 */
private[berth] class BerthSchedulerBackend(
    scheduler: TaskSchedulerImpl,
    sc: SparkContext,
    masterUrl: String)
  extends CoarseGrainedSchedulerBackend(scheduler, sc.env.rpcEnv) with ExecutorSink {

  private val dynamic = Utils.isDynamicAllocationEnabled(conf)
  // Dynamic allocation starts at 0, as on standalone: ExecutorAllocationManager asks for its
  // initial target itself. Without it spark.executor.instances bounds the app, and unset,
  // nothing does: the app takes what spark.cores.max (or the queue) lets it, as standalone.
  private val expectedExecutors =
    if (dynamic || conf.contains(EXECUTOR_INSTANCES)) {
      Some(SchedulerBackendUtils.getInitialTargetExecutorNumber(conf))
    } else None
  private val initialLimit = if (dynamic) Some(0) else conf.get(EXECUTOR_INSTANCES)

  protected override val minRegisteredRatio: Double =
    if (conf.get(SCHEDULER_MIN_REGISTERED_RESOURCES_RATIO).isEmpty && expectedExecutors.nonEmpty) {
      0.8 // Kubernetes' default, where the count is known
    } else super.minRegisteredRatio

  private val timers = ThreadUtils.newDaemonSingleThreadScheduledExecutor("berth-timers")
  private val httpPool = ThreadUtils.newDaemonCachedThreadPool("berth-http", 8)
  private implicit val calls: ExecutionContext = ExecutionContext.fromExecutorService(httpPool)
  private val stopping = new AtomicBoolean(false)
  private val aborted = new AtomicBoolean(false)
  // Executors that registered: one that fails unregistered has its stderr shown.
  private val registeredIds = ConcurrentHashMap.newKeySet[String]()
  private val lifecycle = new ExecutorLifecycle(conf, this, conf.get(DECOMMISSION_ENABLED))
  private val removeDelayMs = conf.get(EXECUTOR_REMOVE_DELAY)
  // What start()'s calls may wait for a leader: the registration's own budget.
  private val StartBudgetMs = 30000L

  @volatile private var client: BerthClient = _
  @volatile private var appId: String = _
  @volatile private var events: BerthEventStream = _
  @volatile private var lastStatus = Status("", "")
  @volatile private var abortReason: String = _

  override def applicationId(): String = Option(appId).getOrElse(super.applicationId())

  override def start(): Unit = {
    super.start()
    client = BerthCredentials.client(conf, masterUrl, httpPool)
    val driverUrl = RpcEndpointAddress(conf.get(DRIVER_HOST_ADDRESS), conf.get(DRIVER_PORT),
      CoarseGrainedSchedulerBackend.ENDPOINT_NAME).toString
    if (dynamic && !conf.contains(EXECUTOR_CORES)) {
      logWarning("berth: dynamic allocation without spark.executor.cores: Spark counts one " +
        "core per executor while berth may give more, so more executors may be asked for " +
        "than needed (SPARK-30299); set spark.executor.cores")
    }
    // Executors' log links go to the first master's UI, which proxies the worker's logs.
    val desc = BerthAppDescription.build(sc, driverUrl, initialLimit, client.masters.head)
    val submitted = try {
      // A repeat after a lost answer gets the first registration's id, not a second app.
      val key = Map("Idempotency-Key" -> UUID.randomUUID().toString)
      client.call("POST", "/v1/apps", Some(desc), key, budgetMs = StartBudgetMs)
    } catch {
      case e: BerthApiException =>
        throw new SparkException(s"berth refused the app: ${e.getMessage}", e)
    }
    appId = submitted.path("id").asText()
    logInfo(s"berth: registered app $appId (${desc.path("memoryPerExecutorMB").asLong()} MB " +
      s"per executor) with ${client.leaderOrFirst}; Spark UI: ${sc.uiWebUrl.getOrElse("none")}")
    failIfCannotStart()
    events = new BerthEventStream(client, appId, timers, onEvent, streamEnded)
    events.start()
    val every = conf.get(BerthConf.STATUS_INTERVAL)
    timers.scheduleWithFixedDelay(() => reportStatus(), every, every, TimeUnit.MILLISECONDS)
  }

  override def stop(): Unit = if (stopping.compareAndSet(false, true)) {
    try {
      Utils.tryLogNonFatalError(super.stop()) // executors are told to stop by RPC first
    } finally {
      if (appId != null) {
        Utils.tryLogNonFatalError {
          val app = client.call("POST", s"/v1/apps/$appId/unregister", budgetMs = 10000)
          logInfo(s"berth: unregistered app $appId")
          if (app != null) lifecycle.appEnded(app)
        }
      }
      Option(events).foreach(e => Utils.tryLogNonFatalError(e.stop()))
      timers.shutdownNow()
      httpPool.shutdownNow()
    }
  }

  /** Spark's target, running and pending: berth's executor limit counts both. */
  override def doRequestTotalExecutors(
      resourceProfileToTotalExecs: Map[ResourceProfile, Int]): Future[Boolean] = {
    val (default, others) = resourceProfileToTotalExecs.partition(_._1.id ==
      ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID)
    if (others.values.exists(_ > 0)) {
      logWarning("berth: an app has one executor shape; executors of other resource " +
        s"profiles (${others.keys.map(_.id).mkString(",")}) are not asked for")
    }
    val limit = default.values.headOption.getOrElse(0)
    if (appId == null) return Future.successful(false)
    Future {
      val body = BerthClient.Json.createObjectNode().put("limit", limit)
      client.call("PUT", s"/v1/apps/$appId/executor-limit", Some(body))
      true
    }.recover { case NonFatal(e) =>
      logWarning(s"berth: setting the executor limit to $limit: ${e.getMessage}")
      false
    }
  }

  /** Spark's choice of executors to kill: berth never replaces them below the limit. */
  override def doKillExecutors(executorIds: Seq[String]): Future[Boolean] = {
    val ids = executorIds.flatMap(_.toIntOption)
    if (appId == null || ids.isEmpty) return Future.successful(false)
    lifecycle.killRequested(ids)
    Future {
      val body = BerthClient.Json.createObjectNode()
      ids.foldLeft(body.putArray("executorIds"))(_.add(_))
      client.call("POST", s"/v1/apps/$appId/kill-executors", Some(body))
      true
    }.recover { case NonFatal(e) =>
      logWarning(s"berth: killing executors ${ids.mkString(",")}: ${e.getMessage}")
      false
    }
  }

  /**
   * SparkContext's start waits here for its executors (spark.scheduler.minRegisteredResources
   * Ratio): an app ended meanwhile (its executors failed past spark.executor.maxNumFailures,
   * or berth ended it) fails the start with the reason, where Spark would say only "Spark
   * context stopped while waiting for backend" once fail() has stopped it.
   */
  override def isReady(): Boolean = Option(abortReason) match {
    case Some(why) => throw new SparkException(why)
    case None => super.isReady()
  }

  override def sufficientResourcesRegistered(): Boolean = expectedExecutors match {
    case Some(n) => totalRegisteredExecutors.get() >= n * minRegisteredRatio
    case None => totalCoreCount.get() >= conf.get(CORES_MAX).getOrElse(0) * minRegisteredRatio
  }

  // ExecutorSink, for the lifecycle.
  override def remove(executorId: String, reason: ExecutorLossReason): Unit =
    removeExecutor(executorId, reason)

  /**
   * As StandaloneSchedulerBackend.executorDecommissioned does, but naming no host: a berth
   * drain or preemption ends executors of one worker, not of a host (several workers may
   * share one), and a decommissioned host makes Spark drop every map output there, the
   * migrated ones included, once the executor is gone.
   */
  override def decommission(executorId: String, why: String): Unit =
    later(decommissionExecutors(Array((executorId, ExecutorDecommissionInfo(why, None))),
      adjustTargetNumExecutors = false, triggeredByExecutor = false))

  override def registered(executorId: String): Boolean = registeredIds.contains(executorId)

  override def showStderr(executorId: Int): Unit = later {
    val lines = stderrTail(executorId, 20)
    if (lines.nonEmpty) {
      logWarning(s"berth: the end of executor $executorId's stderr:\n  ${lines.mkString("\n  ")}")
    }
  }

  override def abort(message: String, lastId: Int): Unit = later {
    // A JVM that would not start says why in its first of three lines ("Improperly
    // specified VM option ...", then "Error: Could not create the Java Virtual Machine.").
    val said = Try(stderrTail(lastId, 4)).getOrElse(Nil).mkString(" / ")
    fail(s"berth: $message${if (said.nonEmpty) s"; its stderr ends: $said" else ""}")
  }

  private def stderrTail(executorId: Int, lines: Int): Seq[String] =
    client.text(s"/v1/apps/$appId/executors/$executorId/logs/stderr?tail=4096").linesIterator
      .map(_.trim).filter(_.nonEmpty).toSeq.takeRight(lines)

  private def later(work: => Unit): Unit =
    try httpPool.execute(() => Utils.tryLogNonFatalError(work)) catch {
      case _: java.util.concurrent.RejectedExecutionException if stopping.get => // stopped
    }

  /**
   * Ends the app for good, as standalone's dead(): running jobs fail with why, then the
   * context stops. With no task set yet (executors failed as the app started, before its
   * first job reached the scheduler) TaskSchedulerImpl.error throws instead; the stop then
   * waits a moment, so that a job on its way fails with the reason (reviveOffers), not with
   * "SparkContext was shut down".
   */
  private def fail(message: String): Unit =
    if (!stopping.get && aborted.compareAndSet(false, true)) {
      logError(message)
      abortReason = message
      val jobsFailed = try { scheduler.error(message); true } catch { case NonFatal(_) => false }
      if (jobsFailed) sc.stopInNewThread()
      else {
        val stop: Runnable = () => sc.stopInNewThread()
        try timers.schedule(stop, 2, TimeUnit.SECONDS) catch {
          case NonFatal(_) => sc.stopInNewThread()
        }
      }
    }

  /** TaskSchedulerImpl calls this as it takes a task set: after fail(), that fails it. */
  override def reviveOffers(): Unit = Option(abortReason) match {
    case Some(why) => try scheduler.error(why) catch { case NonFatal(_) => }
    case None => super.reviveOffers()
  }

  private def onEvent(ev: JsonNode): Unit = try {
    if (ev.path("type").asText() == "appRemoved") {
      val app = ev.path("app")
      fail(s"berth ended app $appId (${app.path("state").asText()}): " +
        Seq(ev.path("message").asText(""), app.path("message").asText("")).find(_.nonEmpty)
          .getOrElse("no reason given"))
    } else {
      lifecycle.onEvent(ev)
    }
  } catch {
    case NonFatal(e) => logWarning(s"berth: handling event ${ev.path("type").asText()}", e)
  }

  private def streamEnded(error: Option[Throwable]): Unit = error.foreach { e =>
    fail(s"berth: lost the event stream of app $appId, which holds it: ${e.getMessage}")
  }

  /**
   * A request no worker could ever hold fails at once, as berth says: "cannot start: ...".
   * Part of start(), so it waits out an election as the registration does (the call's 30-s
   * budget): a leaderless window just after the app registered must not fail the context.
   */
  private def failIfCannotStart(): Unit = {
    val why = status(StartBudgetMs).waiting
    if (why.startsWith("cannot start")) {
      Utils.tryLogNonFatalError(client.call("DELETE", s"/v1/apps/$appId",
        budgetMs = StartBudgetMs))
      appId = null
      throw new SparkException(s"berth cannot run this app's executors: $why")
    }
  }

  private case class Status(waiting: String, excluded: String)

  /** The app's status; the periodic report gives up sooner (the next one comes). */
  private def status(budgetMs: Long = 5000): Status = {
    val app = client.call("GET", s"/v1/apps/$appId", budgetMs = budgetMs)
    val excluded = Option(app.get("excluded")).map(_.toString).getOrElse("")
    Status(app.path("waiting").asText(""), excluded)
  }

  /** Says why the app waits for executors whenever that changes, as `berth run` does. */
  private def reportStatus(): Unit = if (!stopping.get) {
    try {
      val now = status()
      if (now.waiting != lastStatus.waiting) {
        // Held by its own executor limit is Spark's choice, not berth's doing.
        if (now.waiting.contains("executor limit")) logDebug(s"berth: app $appId ${now.waiting}")
        else if (now.waiting.nonEmpty) logWarning(s"berth: app $appId ${now.waiting}")
        else logInfo(s"berth: app $appId no longer waits")
      }
      if (now.excluded != lastStatus.excluded && now.excluded.nonEmpty) {
        logWarning(s"berth: app $appId's executors are kept off workers: ${now.excluded}")
      }
      lastStatus = now
    } catch {
      case NonFatal(e) => logDebug(s"berth: reading app $appId's status: ${e.getMessage}")
    }
  }

  override def createDriverEndpoint(): DriverEndpoint = new BerthDriverEndpoint

  private class BerthDriverEndpoint extends DriverEndpoint {
    override def receiveAndReply(context: RpcCallContext): PartialFunction[Any, Unit] = {
      val base = super.receiveAndReply(context)
      val registration: PartialFunction[Any, Unit] = {
        case r: RegisterExecutor =>
          registeredIds.add(r.executorId)
          base(r)
      }
      registration.orElse(base)
    }

    /**
     * A dropped connection says an executor is gone but not why: berth's event says
     * (its exit code, whether the app is to blame). Stop offering it tasks now and wait
     * for that word a while, as standalone does; remove it as lost if none comes.
     */
    override def onDisconnected(remoteAddress: RpcAddress): Unit =
      addressToExecutorId.get(remoteAddress).foreach { id =>
        disableExecutor(id)
        try {
          val lost: Runnable = () => Utils.tryLogNonFatalError {
            val pending = BerthSchedulerBackend.this.synchronized(executorsPendingLossReason(id))
            if (pending && lifecycle.markRemoved(id)) {
              driverEndpoint.send(RemoveExecutor(id, ExecutorProcessLost(s"berth: executor $id " +
                s"disconnected and berth said nothing of it within $removeDelayMs ms")))
            }
          }
          timers.schedule(lost, removeDelayMs, TimeUnit.MILLISECONDS)
        } catch {
          case _: java.util.concurrent.RejectedExecutionException if stopping.get =>
        }
      }
  }
}
