package org.apache.spark.scheduler.cluster.berth

import java.io.{File, IOException}
import java.net.InetSocketAddress
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.util.concurrent.{ConcurrentHashMap, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import com.sun.net.httpserver.{HttpExchange, HttpServer}
import org.junit.{After, Test}
import org.junit.Assert._

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.launcher.JavaModuleOptions

/**
 * The app the plugin registers, as a real SparkContext builds it (BerthAppDescription.build,
 * with the backend's executor limit and credential), read off a fake master's POST /v1/apps.
 * Each SparkContext runs in a JVM of its own (BerthAppDescriptionBuildChild): its environment
 * is what the BERTH_* fallbacks read, and a SparkContext needs Java 17's module options.
 */
class BerthAppDescriptionBuildSuite {
  private val pool = Executors.newCachedThreadPool()
  @volatile private var stopping = false
  // What the fake master was sent, by the app's name: its description and Authorization.
  private val registered = new ConcurrentHashMap[String, (JsonNode, String)]()
  // App "leaderless": when it registered, and the 503s the fake master answered it since.
  @volatile private var leaderlessSince = 0L
  private val leaderlessRefusals = new java.util.concurrent.atomic.AtomicInteger()
  private val LeaderlessMs = 8000L // longer than the periodic status read's 5-s budget

  private val server = {
    val s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
    s.setExecutor(pool)
    s.createContext("/", (x: HttpExchange) => answer(x))
    s.start()
    s
  }
  private val masterUrl = s"spark+berth://127.0.0.1:${server.getAddress.getPort}"

  @After def stop(): Unit = {
    stopping = true
    server.stop(0)
    pool.shutdownNow()
  }

  /** berth's routes as far as a driver's start and stop go. */
  private def answer(x: HttpExchange): Unit = try {
    val path = x.getRequestURI.getPath
    val id = path.split("/").lift(3).getOrElse("")
    (x.getRequestMethod, path) match {
      // The leader is lost just after the registration: an election runs for LeaderlessMs.
      case ("GET", _) if id == "app-leaderless" &&
          System.nanoTime() - leaderlessSince < TimeUnit.MILLISECONDS.toNanos(LeaderlessMs) =>
        leaderlessRefusals.incrementAndGet()
        reply(x, 503, """{"code":"no_leader","error":"no leader: an election is under way"}""")
      case ("POST", "/v1/apps") =>
        val desc = BerthClient.Json.readTree(x.getRequestBody)
        val name = desc.path("name").asText()
        registered.put(name, (desc, Option(x.getRequestHeaders.getFirst("Authorization")).getOrElse("")))
        if (name == "leaderless") leaderlessSince = System.nanoTime()
        reply(x, 201, s"""{"id":"app-$name","state":"WAITING"}""")
      case ("GET", p) if p.endsWith("/events") =>
        // The stream stays open, a heartbeat at a time, until the driver closes it.
        x.sendResponseHeaders(200, 0)
        val out = x.getResponseBody
        try {
          while (!stopping) {
            out.write("{\"type\":\"heartbeat\",\"nextWithinMs\":5000}\n".getBytes(UTF_8))
            out.flush()
            Thread.sleep(250)
          }
        } catch { case _: IOException | _: InterruptedException => }
      case ("POST", p) if p.endsWith("/unregister") =>
        reply(x, 200, s"""{"id":"$id","state":"FINISHED","executors":[]}""")
      case ("GET", _) => reply(x, 200, s"""{"id":"$id","state":"WAITING","waiting":""}""")
      case _ => reply(x, 200, "{}")
    }
  } finally x.close()

  private def reply(x: HttpExchange, status: Int, body: String): Unit = {
    val bytes = body.getBytes(UTF_8)
    x.sendResponseHeaders(status, bytes.length)
    x.getResponseBody.write(bytes)
  }

  /**
   * Starts and stops one SparkContext per case (the app's name, its settings) in a JVM with
   * exactly env (and PATH), and returns what each case's driver said: its SparkConf once
   * started (what executors are sent), or why it did not start.
   */
  private def drivers(env: Map[String, String], cases: (String, Map[String, String])*)
      : Map[String, JsonNode] = {
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    val classPath = Option(System.getProperty("surefire.test.class.path")).filter(_.nonEmpty)
      .getOrElse(System.getProperty("java.class.path"))
    val args = cases.flatMap { case (name, settings) =>
      Seq("--app", name) ++ settings.map { case (k, v) => s"$k=$v" }
    }
    val cmd = Seq(java, "-Xmx1g", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC") ++
      JavaModuleOptions.defaultModuleOptionArray().toSeq ++
      Seq("-cp", classPath, BerthAppDescriptionBuildChild.getClass.getName.stripSuffix("$"),
        masterUrl) ++ args
    val pb = new ProcessBuilder(cmd.asJava)
    pb.environment().clear()
    pb.environment().put("PATH", sys.env.getOrElse("PATH", "/usr/bin:/bin"))
    env.foreach { case (k, v) => pb.environment().put(k, v) }
    val log = File.createTempFile("berth-build-suite", ".log")
    try {
      pb.redirectError(log)
      val p = pb.start()
      val out = new String(p.getInputStream.readAllBytes(), UTF_8)
      assertTrue("the driver JVM did not end within 3 minutes", p.waitFor(3, TimeUnit.MINUTES))
      def logTail = new String(Files.readAllBytes(log.toPath), UTF_8).linesIterator.toSeq
        .takeRight(40).mkString("\n")
      assertEquals(s"the driver JVM's exit; its log ends:\n$logTail", 0, p.exitValue())
      val said = out.linesIterator.filter(_.startsWith("BERTHTEST ")).map { l =>
        val Array(_, name, json) = l.split(" ", 3)
        name -> BerthClient.Json.readTree(json)
      }.toMap
      assertEquals(s"the drivers that reported; the log ends:\n$logTail",
        cases.map(_._1).toSet, said.keySet)
      said
    } finally log.delete()
  }

  /** The case's description, as the master got it, and the credential it came with. */
  private def description(name: String): (JsonNode, String) =
    Option(registered.get(name)).getOrElse { fail(s"no app $name registered"); null }

  private def command(d: JsonNode): Seq[String] = d.path("command").elements().asScala
    .map(_.asText()).toSeq

  private def env(d: JsonNode): Map[String, String] = d.path("env").properties().asScala
    .map(e => e.getKey -> e.getValue.asText()).toMap

  private def fields(d: JsonNode): Set[String] = d.fieldNames().asScala.toSet

  /** The heap: the command's -Xmx, in MiB. */
  private def heap(d: JsonNode): Long =
    command(d).find(_.startsWith("-Xmx")).map(_.stripPrefix("-Xmx").stripSuffix("m").toLong)
      .getOrElse { fail(s"no -Xmx in ${command(d)}"); 0L }

  /** What the driver holds once started: every spark.* of it goes to each executor. */
  private def startedConf(said: JsonNode): Map[String, String] = {
    assertFalse(s"the driver did not start: ${said.path("error").asText()}", said.has("error"))
    said.path("conf").properties().asScala.map(e => e.getKey -> e.getValue.asText()).toMap
  }

  private val sparkHomeEnv = Map("SPARK_HOME" -> "/opt/spark-env", "HOME" -> "/tmp")

  @Test def sparksSettingsMapToTheApp(): Unit = {
    val said = drivers(sparkHomeEnv,
      "defaults" -> Map(),
      "set" -> Map(
        "spark.executor.instances" -> "3",
        "spark.executor.cores" -> "2",
        "spark.executor.memory" -> "2g",
        "spark.executor.memoryOverhead" -> "512m",
        "spark.cores.max" -> "6",
        "spark.executor.resource.gpu.amount" -> "1",
        "spark.task.resource.gpu.amount" -> "0.5",
        "spark.berth.queue" -> "etl",
        "spark.berth.priority" -> "7",
        "spark.berth.constraints" -> "gpu-model=T4,P100; zone!=z2",
        "spark.berth.sparkHome" -> "/opt/spark-conf",
        "spark.berth.stopAfterDisconnect" -> "90s",
        "spark.berth.token" -> "bt.acme.conf-secret"),
      "dynamic" -> Map(
        "spark.dynamicAllocation.enabled" -> "true",
        "spark.dynamicAllocation.shuffleTracking.enabled" -> "true",
        "spark.executor.instances" -> "5",
        "spark.executor.memory" -> "8g"),
      "badpriority" -> Map("spark.berth.priority" -> "high"),
      "leaderless" -> Map())

    // Nothing set: no limit, no executor size but memory (Spark's 1g heap + its 384 MiB
    // floor of overhead), no berth keys; Spark from the driver's SPARK_HOME.
    val (plain, plainAuth) = description("defaults")
    assertEquals(Set("name", "command", "env", "memoryPerExecutorMB"), fields(plain))
    assertEquals("defaults", plain.path("name").asText())
    assertEquals(1024 + 384, plain.path("memoryPerExecutorMB").asLong())
    assertEquals(1024, heap(plain))
    assertEquals("/opt/spark-env", env(plain)("SPARK_HOME"))
    assertTrue(command(plain).mkString(" "),
      command(plain).containsSlice(Seq("-cp", "/opt/spark-env/conf:/opt/spark-env/jars/*")))
    // Without spark.executor.cores the worker tells the executor the cores it gave.
    assertTrue(command(plain).containsSlice(Seq("--cores", "{{CORES}}")))
    assertFalse(command(plain).contains("--resourcesFile"))
    assertEquals("", plainAuth)
    startedConf(said("defaults"))

    val (set, setAuth) = description("set")
    assertEquals(3, set.path("initialExecutorLimit").asInt())
    assertEquals(2, set.path("coresPerExecutor").asInt())
    assertTrue(command(set).containsSlice(Seq("--cores", "{{CORES}}")))
    assertEquals(2048 + 512, set.path("memoryPerExecutorMB").asLong())
    assertEquals(2048, heap(set))
    assertEquals(6, set.path("maxCores").asInt())
    assertEquals("""{"gpu":1}""", set.path("resourcesPerExecutor").toString)
    assertEquals(Seq("--resourcesFile", "{{RESOURCES}}"), command(set).takeRight(2))
    assertEquals("etl", set.path("queue").asText())
    assertEquals(7, set.path("priority").asInt())
    assertEquals("""[{"label":"gpu-model","in":["T4","P100"]},{"label":"zone","notIn":["z2"]}]""",
      set.path("constraints").toString)
    assertEquals("90s", set.path("stopAfterDisconnect").asText())
    // spark.berth.sparkHome wins over the driver's SPARK_HOME.
    assertEquals("/opt/spark-conf", env(set)("SPARK_HOME"))
    assertTrue(command(set).containsSlice(Seq("-cp", "/opt/spark-conf/conf:/opt/spark-conf/jars/*")))
    // The token is the driver's credential, and nothing executors get holds it: not the app's
    // description (their command line and environment), not the SparkConf they are sent.
    assertEquals("Bearer bt.acme.conf-secret", setAuth)
    assertFalse(set.toString, set.toString.contains("conf-secret"))
    val conf = startedConf(said("set"))
    assertFalse(conf.toString, conf.contains("spark.berth.token"))
    assertFalse(conf.toString, conf.values.exists(_.contains("conf-secret")))
    assertEquals("etl", conf("spark.berth.queue")) // the others stay

    // Dynamic allocation starts at 0 whatever spark.executor.instances says; 10% of a large
    // heap is above the floor: 8g reserves 8192 + 819 MiB.
    val (dyn, _) = description("dynamic")
    assertEquals(0, dyn.path("initialExecutorLimit").asInt())
    assertEquals(8192 + 819, dyn.path("memoryPerExecutorMB").asLong())
    assertFalse(fields(dyn).contains("coresPerExecutor"))
    startedConf(said("dynamic"))

    // No leader for 8 s after the registration: start() waits it out, as it would for the
    // registration itself, and the context starts.
    startedConf(said("leaderless"))
    // ... pausing between rounds of asking (50 ms doubling to 500 ms: about 25 in 8 s), not
    // asking again at once (thousands).
    val refusals = leaderlessRefusals.get
    assertTrue(s"$refusals refusals: want several, with pauses between", refusals > 1 && refusals < 100)

    assertEquals(None, Option(registered.get("badpriority")))
    assertTrue(said("badpriority").toString,
      said("badpriority").path("error").asText().contains("spark.berth.priority 'high' is not a whole number"))
  }

  @Test def berthsKeysFallBackOnTheEnvironmentTheCliReads(): Unit = {
    val said = drivers(sparkHomeEnv ++ Map(
      "BERTH_RUN_QUEUE" -> "envq",
      "BERTH_RUN_PRIORITY" -> "3",
      "BERTH_RUN_CONSTRAINT" -> "zone=a,b",
      "BERTH_TOKEN" -> "bt.acme.env-secret"),
      "fromenv" -> Map("spark.executor.memory" -> "512m"),
      "settingswin" -> Map(
        "spark.berth.queue" -> "etl",
        "spark.berth.priority" -> "9",
        "spark.berth.constraints" -> "zone!=c",
        "spark.berth.token" -> "bt.acme.conf-secret"))

    val (fromEnv, envAuth) = description("fromenv")
    assertEquals("envq", fromEnv.path("queue").asText())
    assertEquals(3, fromEnv.path("priority").asInt())
    assertEquals("""[{"label":"zone","in":["a","b"]}]""", fromEnv.path("constraints").toString)
    assertEquals("Bearer bt.acme.env-secret", envAuth)
    assertFalse(fromEnv.toString.contains("env-secret"))
    assertEquals(512 + 384, fromEnv.path("memoryPerExecutorMB").asLong()) // 512m reserves 896
    assertFalse(fields(fromEnv).contains("initialExecutorLimit"))
    val conf = startedConf(said("fromenv"))
    assertFalse(conf.toString, conf.values.exists(_.contains("env-secret")))

    val (won, wonAuth) = description("settingswin")
    assertEquals("etl", won.path("queue").asText())
    assertEquals(9, won.path("priority").asInt())
    assertEquals("""[{"label":"zone","notIn":["c"]}]""", won.path("constraints").toString)
    assertEquals("Bearer bt.acme.conf-secret", wonAuth)
    assertFalse(startedConf(said("settingswin")).contains("spark.berth.token"))
  }
}

/**
 * A driver JVM for BerthAppDescriptionBuildSuite: args are berth's master URL, then, for each
 * case, `--app NAME` and its settings `KEY=VALUE`. Each case's SparkContext starts against
 * the suite's fake master and stops; a line `BERTHTEST NAME {"conf": {...}}` (the started
 * context's SparkConf) or `BERTHTEST NAME {"error": "..."}` says how it went.
 */
object BerthAppDescriptionBuildChild {
  def main(args: Array[String]): Unit = {
    val master = args.head
    val cases = args.tail.foldLeft(Vector.empty[(String, Vector[String])]) {
      case (acc, "--app") => acc :+ ("" -> Vector.empty)
      case (acc, a) if acc.nonEmpty && acc.last._1.isEmpty => acc.init :+ (a -> Vector.empty)
      case (acc, a) => acc.init :+ (acc.last._1 -> (acc.last._2 :+ a))
    }
    for ((name, settings) <- cases) {
      val conf = new SparkConf(false).setMaster(master).setAppName(name)
        .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false")
        .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "0s")
      settings.foreach { s =>
        val Array(k, v) = s.split("=", 2)
        conf.set(k, v)
      }
      val result = BerthClient.Json.createObjectNode()
      try {
        val sc = new SparkContext(conf)
        try {
          val got = result.putObject("conf")
          sc.conf.getAll.sorted.foreach { case (k, v) => got.put(k, v) }
        } finally sc.stop()
      } catch {
        case e: Exception => result.put("error", String.valueOf(e.getMessage))
      }
      println(s"BERTHTEST $name $result")
    }
  }
}
