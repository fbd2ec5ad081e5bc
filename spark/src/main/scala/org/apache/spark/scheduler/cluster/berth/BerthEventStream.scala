/*
 * berth's Spark cluster manager: following the app's event stream.
 */
package org.apache.spark.scheduler.cluster.berth

import java.io.{BufferedReader, InputStream, InputStreamReader}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{ScheduledExecutorService, ScheduledFuture, TimeUnit}

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.internal.Logging

/**
 * Follows GET /v1/apps/{id}/events on the leader, one JSON event per line, and hands every
 * event but heartbeats to `handle`, in order, on its own thread. Holding the stream open is
 * the app's lease: a driver that stops following it for the master's --app-timeout loses its
 * app. The first event of every connection is a snapshot, so a reconnection loses nothing.
 *
 * The master promises its next line within nextWithinMs (a heartbeat every few hundred ms
 * while it leads with a quorum). A stream silent past that (plus a margin for our own GC
 * pauses) is cut by a timer and reconnected to whichever master leads by then, as is one that
 * ends without appRemoved; a stream that delivered nothing before breaking backs off first.
 * `ended` is called once: after appRemoved (None), or when no master serves the stream
 * within the retry budget or one refuses it, such as a 404 for an app the master no longer
 * knows (Some(error)). Not after stop().
 */
private[berth] class BerthEventStream(
    client: BerthClient,
    appId: String,
    timers: ScheduledExecutorService,
    handle: JsonNode => Unit,
    ended: Option[Throwable] => Unit,
    retryBudgetMs: Long = 60000,
    openTimeoutMs: Long = 2000) extends Logging {

  private val path = s"/v1/apps/$appId/events"
  private val marginMs = 1000L
  private val defaultSilenceMs = 30000L // until the master says how soon its next line comes

  @volatile private var stopped = false
  @volatile private var current: InputStream = _
  private val thread = new Thread(() => run(), s"berth-events-$appId")
  thread.setDaemon(true)

  def start(): Unit = thread.start()

  /** Closes the stream (the master sees the client go) and waits a little for the thread. */
  def stop(): Unit = {
    stopped = true
    closeQuietly(current)
    thread.interrupt()
    thread.join(5000)
  }

  private def run(): Unit = {
    var pauseMs = 0L
    while (!stopped) {
      val outcome = try {
        val in = client.openStream(path, retryBudgetMs, openTimeoutMs)
        logDebug(s"berth: following the events of $appId on ${client.leaderOrFirst}")
        current = in
        if (stopped) closeQuietly(in)
        read(in)
      } catch {
        case NonFatal(_) if stopped => return
        case NonFatal(e) =>
          ended(Some(e))
          return
      }
      outcome match {
        case Final => ended(None); return
        case Broken(got, why) =>
          if (stopped) return
          logInfo(s"berth: event stream of $appId broken ($why), reconnecting")
          pauseMs = if (got > 0) 0 else math.min(math.max(2 * pauseMs, 50), 500)
          if (pauseMs > 0) {
            try Thread.sleep(pauseMs) catch { case _: InterruptedException => return }
          }
      }
    }
  }

  private sealed trait Outcome
  private case object Final extends Outcome
  private case class Broken(got: Int, why: String) extends Outcome

  /** Reads one connection until it breaks, is cut for its silence, or the app is removed. */
  private def read(in: InputStream): Outcome = {
    val reader = new BufferedReader(new InputStreamReader(in, UTF_8))
    val master = client.leaderOrFirst // the stream was opened on the leader
    @volatile var silent = false
    var silenceMs = defaultSilenceMs
    var watchdog: ScheduledFuture[_] = null
    def arm(): Unit = {
      if (watchdog != null) watchdog.cancel(false)
      val cut: Runnable = () => { silent = true; closeQuietly(in) }
      watchdog = timers.schedule(cut, silenceMs + marginMs, TimeUnit.MILLISECONDS)
    }
    var got = 0
    try {
      arm()
      while (true) {
        val line = try reader.readLine() catch {
          case NonFatal(e) =>
            if (silent) {
              client.suspect(master) // it broke its promise: look elsewhere first
              return Broken(got, s"no line for ${silenceMs + marginMs} ms from $master")
            }
            return Broken(got, BerthClient.describe(e))
        }
        if (line == null) return Broken(got, s"$master ended it")
        if (line.trim.nonEmpty) {
          val ev = BerthClient.Json.readTree(line)
          got += 1
          val next = ev.path("nextWithinMs").asLong(0)
          if (next > 0) silenceMs = next
          arm()
          val kind = ev.path("type").asText()
          logTrace(s"berth: event $line")
          if (kind != "heartbeat") {
            handle(ev)
            if (kind == "appRemoved") return Final
          }
        }
      }
      Final // not reached
    } finally {
      if (watchdog != null) watchdog.cancel(false)
      closeQuietly(in)
    }
  }

  private def closeQuietly(in: InputStream): Unit =
    if (in != null) try in.close() catch { case NonFatal(_) => }
}
