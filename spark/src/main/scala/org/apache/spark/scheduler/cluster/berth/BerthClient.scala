/*
 * berth's Spark cluster manager: calls to the masters' API.
 */
package org.apache.spark.scheduler.cluster.berth

import java.io.{IOException, InputStream}
import java.net.{ConnectException, URI}
import java.net.http.{HttpClient, HttpRequest, HttpResponse, HttpTimeoutException}
import java.nio.charset.StandardCharsets.UTF_8
import java.time.Duration
import java.util.concurrent.{ExecutionException, ExecutorService, ThreadLocalRandom, TimeUnit,
  TimeoutException}
import javax.net.ssl.{SSLContext, SSLException}

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.SparkException
import org.apache.spark.internal.Logging

/** A master's answer that is not a 2xx: its status, berth's error code and message. */
private[berth] class BerthApiException(val status: Int, val code: String, message: String)
  extends SparkException(message)

/**
 * Calls berth's masters as berth's Go client does (client/retry.go): only the leader takes
 * writes and streams, so a follower's 307 names the leader (kept, with the credential, which
 * an automatic redirect would drop); a master that does not answer, or answers 503 while an
 * election runs, is left for the next one, with a jittered backoff, within a retry budget.
 * Every request repeated here is safe to repeat: reads, writes with the same effect twice
 * (limits, kills, unregister) and the registration, which carries an Idempotency-Key.
 *
 * What retrying cannot mend fails at once: a 4xx (the message is berth's, naming the field),
 * a refused credential, a TLS failure on every master, and no master answering at all for
 * `waitForMasterMs` before any ever did.
 */
private[berth] class BerthClient(
    val masters: Seq[String],
    credential: Option[String],
    sslContext: Option[SSLContext],
    executor: ExecutorService,
    requestTimeoutMs: Long = 10000,
    waitForMasterMs: Long = 10000) extends Logging {

  import BerthClient._

  private val http = {
    val b = HttpClient.newBuilder()
      // HTTP/1.1: the JDK's default (2) sends plain-http requests with an h2c upgrade,
      // which berth's masters do not take, and an event stream then never flows.
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofMillis(math.min(requestTimeoutMs, 5000)))
      .followRedirects(HttpClient.Redirect.NEVER)
      .executor(executor)
    sslContext.foreach(b.sslContext)
    b.build()
  }

  @volatile private var leader: Option[String] = None
  @volatile private var cursor = 0
  @volatile private var reached = false

  /** The master last known to lead (for log links), else the first one. */
  def leaderOrFirst: String = leader.getOrElse(masters.head)

  /** Sends a JSON request and returns the 2xx answer's JSON (null for an empty body). */
  def call(
      method: String,
      path: String,
      body: Option[JsonNode] = None,
      headers: Map[String, String] = Map.empty,
      budgetMs: Long = 30000): JsonNode = {
    val bytes = roundTrip(method, path, body, headers, budgetMs, stream = false) { (req, ms) =>
      await(http.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray()), ms)
    }
    if (bytes.body().isEmpty) null else Json.readTree(bytes.body())
  }

  /** The app's event stream, from the leader; the caller reads and closes it. */
  def openStream(path: String, budgetMs: Long, openTimeoutMs: Long): InputStream = {
    roundTrip("GET", path, None, Map.empty, budgetMs, stream = true) { (req, _) =>
      // Only the wait for the headers is bounded: the stream lives on, and its reader
      // watches the silence between lines (BerthEventStream).
      await(http.sendAsync(req, HttpResponse.BodyHandlers.ofInputStream()), openTimeoutMs)
    }.body()
  }

  /** Plain text (an executor's log tail); empty when it cannot be had quickly. */
  def text(path: String): String =
    try {
      val r = roundTrip("GET", path, None, Map.empty, requestTimeoutMs, stream = false) {
        (req, ms) => await(http.sendAsync(req, HttpResponse.BodyHandlers.ofString(UTF_8)), ms)
      }
      r.body()
    } catch {
      case e: Exception =>
        logDebug(s"berth: GET $path: ${e.getMessage}")
        ""
    }

  /** Forget base as the leader: its stream went silent (frozen, cut off or deposed). */
  def suspect(base: String): Unit = if (leader.contains(base)) {
    leader = None
    cursor = masters.indexOf(base) + 1
  }

  private def roundTrip[T](
      method: String,
      path: String,
      body: Option[JsonNode],
      headers: Map[String, String],
      budgetMs: Long,
      stream: Boolean)(send: (HttpRequest, Long) => HttpResponse[T]): HttpResponse[T] = {
    val start = System.nanoTime()
    def elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
    var target = leader.getOrElse(masters(cursor % masters.size))
    var backoffMs = 50L
    var redirects = 0
    var attempts = 0
    var lastError = ""
    var refusedSince = -1L // since when no master answered at all
    val broken = scala.collection.mutable.Map[String, String]() // masters TLS rules out
    while (true) {
      attempts += 1
      val where = s"$method $target$path"
      var pause = true
      try {
        val resp = send(request(method, target + path, body, headers, stream), requestTimeoutMs)
        reached = true
        refusedSince = -1L
        if (resp.statusCode() / 100 == 2) {
          if (stream || method != "GET") leader = Some(target)
          return resp
        }
        val (code, msg, named) = errorOf(resp)
        lastError = s"$where: ${resp.statusCode()} $code: $msg"
        resp.statusCode() match {
          case 307 if named.nonEmpty =>
            val next = named.get
            if (target.startsWith("https:") && next.startsWith("http:")) {
              throw new BerthApiException(307, code, s"$where: redirected from https to $next: " +
                "refused, the credential would go out in clear text")
            }
            if (next == target) {
              target = nextMaster(target)
            } else {
              leader = Some(next)
              target = next
              redirects += 1
              pause = redirects > 2 * masters.size + 2 // masters pointing at each other
            }
          case 503 if code == "no_leader" || code == "leader_preparing" =>
            // The master held the request up to a second for an election: ask the next now,
            // and pause once every master has said so (none may have held it).
            target = nextMaster(target)
            redirects += 1
            pause = redirects >= masters.size
          case 307 | 503 | 504 =>
            target = nextMaster(target)
          case 401 =>
            throw new BerthApiException(401, code, s"$where: the master refused the " +
              s"credential: $msg (check ${BerthConf.TOKEN.key} or BERTH_TOKEN, " +
              s"${BerthConf.SECRET_FILE.key} or BERTH_SECRET_FILE)")
          case 400 if msg.contains("HTTPS server") =>
            throw new BerthApiException(400, code, s"$where: the masters speak TLS: give " +
              s"their CA in ${BerthConf.TLS_CA_FILE.key} or BERTH_TLS_CA_FILE")
          case status =>
            throw new BerthApiException(status, code,
              s"$where: $msg ($status${if (code.nonEmpty) s" $code" else ""})")
        }
      } catch {
        case e: BerthApiException => throw e
        case e: SSLException =>
          val hint = if (String.valueOf(e.getMessage).contains("not a berth master")) {
            "is that a worker's address? The master URL names the masters' API addresses"
          } else {
            s"check ${BerthConf.TLS_CA_FILE.key}: its CA must have signed the masters' " +
              "certificates, for the addresses in the master URL; a master without TLS fails too"
          }
          broken(target) = s"TLS with $target failed: ${e.getMessage} ($hint)"
          lastError = broken(target)
          if (masters.forall(broken.contains)) throw new SparkException(s"berth: $lastError", e)
          target = masters.find(m => !broken.contains(m)).get
          pause = false
        case e @ (_: IOException | _: TimeoutException) =>
          lastError = s"$where: ${describe(e)}"
          if (e.isInstanceOf[ConnectException] && !reached) {
            if (refusedSince < 0) refusedSince = elapsedMs
            if (elapsedMs - refusedSince >= waitForMasterMs) {
              throw new SparkException(s"berth: no master answers at ${masters.mkString(", ")} " +
                s"(tried for ${elapsedMs / 1000.0} s): $lastError")
            }
          }
          leader = leader.filterNot(_ == target)
          target = nextMaster(target)
      }
      if (elapsedMs >= budgetMs) {
        throw new SparkException(s"berth: $method $path: no master could serve it within " +
          s"$budgetMs ms ($attempts attempts): $lastError")
      }
      logDebug(s"berth: retrying $method $path on $target after: $lastError")
      if (pause) {
        val ms = backoffMs / 2 + ThreadLocalRandom.current().nextLong(backoffMs / 2 + 1)
        Thread.sleep(math.min(ms, math.max(budgetMs - elapsedMs, 0)))
        backoffMs = math.min(2 * backoffMs, 500) // a failover takes about 2 s: look often
        redirects = 0
      }
      while (broken.contains(target) && !masters.forall(broken.contains)) {
        target = nextMaster(target)
      }
    }
    throw new IllegalStateException("unreachable")
  }

  private def request(
      method: String,
      url: String,
      body: Option[JsonNode],
      headers: Map[String, String],
      stream: Boolean): HttpRequest = {
    val b = HttpRequest.newBuilder(URI.create(url))
    if (!stream) b.timeout(Duration.ofMillis(requestTimeoutMs))
    body match {
      case Some(json) =>
        b.header("Content-Type", "application/json") // berth refuses other bodies
        b.method(method, HttpRequest.BodyPublishers.ofByteArray(Json.writeValueAsBytes(json)))
      case None => b.method(method, HttpRequest.BodyPublishers.noBody())
    }
    credential.foreach(c => b.header("Authorization", s"Bearer $c"))
    headers.foreach { case (k, v) => b.header(k, v) }
    b.build()
  }

  /** The next master of the list after base (which may have come from a redirect). */
  private def nextMaster(base: String): String = synchronized {
    val i = masters.indexOf(base)
    cursor = if (i >= 0) i + 1 else cursor
    masters(cursor % masters.size)
  }

  /** An error answer's code, message and the leader it names (307). */
  private def errorOf(resp: HttpResponse[_]): (String, String, Option[String]) = {
    val text = resp.body() match {
      case b: Array[Byte] => new String(b, UTF_8)
      case s: String => s
      case in: InputStream =>
        try new String(in.readNBytes(64 << 10), UTF_8) finally in.close()
      case _ => ""
    }
    val json = try Option(Json.readTree(text)) catch { case _: IOException => None }
    def field(name: String) = json.flatMap(j => Option(j.get(name))).map(_.asText())
      .filter(_.nonEmpty)
    val location = Option(resp.headers().firstValue("Location").orElse(null))
      .map(l => URI.create(l)).map(u => s"${u.getScheme}://${u.getAuthority}")
    (field("code").getOrElse(""), field("error").getOrElse(text.trim.take(300)),
      field("leader").orElse(location).map(_.stripSuffix("/")))
  }
}

private[berth] object BerthClient {
  val Json = new ObjectMapper()

  /** Waits for an exchange, unwrapping its failure; a timeout abandons it. */
  def await[T](f: java.util.concurrent.CompletableFuture[T], ms: Long): T =
    try f.get(ms, TimeUnit.MILLISECONDS) catch {
      case e: ExecutionException => throw e.getCause
      case e: TimeoutException =>
        f.cancel(true)
        throw new HttpTimeoutException(s"no answer within $ms ms")
    }

  /** What a failed connection says, without the stack's noise. */
  def describe(e: Throwable): String = {
    val chain = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq
    val names = chain.map(_.getClass.getSimpleName).distinct.mkString(" < ")
    chain.flatMap(c => Option(c.getMessage)).find(_.nonEmpty) match {
      case Some(msg) => s"$msg ($names)"
      // The JDK's client says nothing more of a refused connection.
      case None if chain.exists(_.isInstanceOf[ConnectException]) =>
        s"connection refused or unreachable ($names)"
      case None => names
    }
  }
}
