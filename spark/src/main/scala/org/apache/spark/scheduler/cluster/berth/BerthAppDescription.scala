/*
 * berth's Spark cluster manager: the app it registers.
 */
package org.apache.spark.scheduler.cluster.berth

import java.io.File

import com.fasterxml.jackson.databind.node.ObjectNode

import org.apache.spark.{SecurityManager, SparkConf, SparkContext, SparkException, SSLOptions}
import org.apache.spark.internal.config._
import org.apache.spark.internal.config.Python.PYSPARK_EXECUTOR_MEMORY
import org.apache.spark.resource.ResourceProfile
import org.apache.spark.util.Utils

/**
 * berth's AppDescription for a SparkContext, as StandaloneSchedulerBackend builds Spark's
 * ApplicationDescription and the standalone Worker's ExecutorRunner turns it into a process
 * (CommandUtils, WorkerCommandBuilder): a worker runs argv directly, with no spark-class,
 * so the java command line is written out here in full (but for the choice of java).
 */
private[berth] object BerthAppDescription {
  val ExecutorMain = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

  /**
   * Where executors keep blocks and shuffle files: below their berth home, an absolute path
   * ({{HOME}}), as standalone's ExecutorRunner gives SPARK_EXECUTOR_DIRS, so that the worker's
   * clean-up of the app's directory removes them too.
   */
  val LocalDirs = "{{HOME}}/spark-local"

  /**
   * Runs the executor's java as a standalone Worker does: spark.berth.executor.java when set,
   * else $JAVA_HOME/bin/java where the worker (or spark.executorEnv.JAVA_HOME) sets
   * JAVA_HOME, else java from the PATH. berth runs argv without a shell and substitutes no
   * environment variables, so a shell makes the choice on each worker; exec leaves the JVM
   * as the process berth watches and kills. Its arguments: Spark's home on the worker, the
   * java asked for ("" for the worker's), then java's.
   *
   * First it checks that the worker has what every executor needs, the java and Spark's
   * jars/, and says which it lacks on stderr ("berth: no java at ... on this worker", "berth:
   * no Spark at ..."), exiting LauncherExitCodes (127 missing, 126 not executable, as a shell
   * does) before any JVM runs: a machine's lack, which ExecutorLifecycle does not charge to
   * the app. A java whose loader fails (a library missing) exits 127 before the JVM too.
   */
  val LauncherScript: String = Seq(
    "h=$1 j=$2; shift 2",
    "if [ -z \"$j\" ]; then",
    "  if [ -n \"$JAVA_HOME\" ]; then j=$JAVA_HOME/bin/java",
    "  elif ! j=$(command -v java); then",
    "    echo \"berth: no java on this worker: no JAVA_HOME, and none in its PATH $PATH\" >&2; exit 127",
    "  fi",
    "fi",
    "if [ ! -f \"$j\" ]; then echo \"berth: no java at $j on this worker\" >&2; exit 127; fi",
    "if [ ! -x \"$j\" ]; then echo \"berth: no java at $j on this worker: it is not executable\" >&2; exit 126; fi",
    "if [ ! -d \"$h/jars\" ]; then echo \"berth: no Spark at $h on this worker: no $h/jars\" >&2; exit 127; fi",
    "exec \"$j\" \"$@\"").mkString("\n")

  /** The exits of a launcher that found no java or no Spark (or a java that cannot load). */
  val LauncherExitCodes: Set[Int] = Set(126, 127)

  /** The launcher's argv up to java's own arguments: home is Spark's on the workers. */
  def launcher(home: String, java: Option[String]): Seq[String] =
    Seq("/bin/sh", "-c", LauncherScript, "berth-java", home, java.getOrElse(""))

  /** The resources each executor asks for: its process's memory, heap, cores, custom. */
  case class Shape(
      totalMemoryMiB: Long,
      heapMiB: Long,
      cores: Option[Int],
      custom: Map[String, Long])

  def shape(sc: SparkContext): Shape = {
    val conf = sc.conf
    val rp = sc.resourceProfileManager.defaultResourceProfile
    // Spark's own rule, as YARN and Kubernetes size a container: heap + overhead
    // (spark.executor.memoryOverhead, else max(minMemoryOverhead 384m, factor 0.1 x heap))
    // + off-heap + PySpark's memory when set.
    val r = ResourceProfile.getResourcesForClusterManager(rp.id, rp.executorResources,
      conf.get(EXECUTOR_MIN_MEMORY_OVERHEAD), conf.get(EXECUTOR_MEMORY_OVERHEAD_FACTOR), conf,
      isPythonApp = conf.contains(PYSPARK_EXECUTOR_MEMORY), Map.empty)
    // Only an explicit spark.executor.cores fixes the size; without it berth's placement
    // gives each executor what it finds (Spark standalone's default), and --cores says so.
    val cores = conf.getOption(EXECUTOR_CORES.key).map(_.toInt)
    Shape(r.totalMemMiB, r.executorMemoryMiB, cores,
      r.customResources.map { case (name, req) => name -> req.amount })
  }

  def build(
      sc: SparkContext,
      driverUrl: String,
      initialLimit: Option[Int],
      logBase: String): ObjectNode = {
    val conf = sc.conf
    val s = shape(sc)
    val json = BerthClient.Json.createObjectNode()
    json.put("name", sc.appName)
    val argv = json.putArray("command")
    command(conf, sparkHome(sc), driverUrl, s).foreach(argv.add)
    val env = json.putObject("env")
    environment(sc, logBase).toSeq.sorted.foreach { case (k, v) => env.put(k, v) }
    // berth's status and UI link to Spark's; the master takes http(s) URLs only.
    sc.uiWebUrl.filter(u => u.startsWith("http://") || u.startsWith("https://"))
      .foreach(json.put("uiUrl", _))
    conf.get(CORES_MAX).foreach(json.put("maxCores", _))
    s.cores.foreach(json.put("coresPerExecutor", _))
    json.put("memoryPerExecutorMB", s.totalMemoryMiB)
    initialLimit.foreach(json.put("initialExecutorLimit", _))
    if (s.custom.nonEmpty) {
      val res = json.putObject("resourcesPerExecutor")
      s.custom.foreach { case (name, amount) => res.put(name, amount) }
    }
    BerthConf.orEnv(conf, BerthConf.QUEUE.key, "BERTH_RUN_QUEUE").foreach(json.put("queue", _))
    BerthConf.orEnv(conf, BerthConf.PRIORITY.key, "BERTH_RUN_PRIORITY").foreach { p =>
      json.put("priority", p.toIntOption.getOrElse(throw new SparkException(
        s"berth: ${BerthConf.PRIORITY.key} '$p' is not a whole number")))
    }
    BerthConf.orEnv(conf, BerthConf.CONSTRAINTS.key, "BERTH_RUN_CONSTRAINT").foreach { spec =>
      val arr = json.putArray("constraints")
      BerthConf.parseConstraints(spec).foreach { c =>
        val o = arr.addObject().put("label", c.label)
        if (c.in.nonEmpty) c.in.foldLeft(o.putArray("in"))(_.add(_))
        if (c.notIn.nonEmpty) c.notIn.foldLeft(o.putArray("notIn"))(_.add(_))
      }
    }
    conf.get(BerthConf.STOP_AFTER_DISCONNECT).foreach { secs =>
      json.put("stopAfterDisconnect", s"${secs}s")
    }
    json
  }

  /**
   * The executor's argv: the launcher (with spark.berth.executor.java, if set), java's class
   * path, heap, options, then the backend's args.
   */
  def command(conf: SparkConf, home: String, driverUrl: String, s: Shape): Seq[String] = {
    val java = launcher(home, conf.get(BerthConf.EXECUTOR_JAVA))
    val userCp = conf.get(EXECUTOR_CLASS_PATH).toSeq.flatMap(_.split(File.pathSeparator))
    val cp = (userCp ++ Seq(s"$home/conf", s"$home/jars/*")).distinct
    // Spark's own: spark.auth*, spark.rpc*, spark.network*, spark.ssl* but passwords, ports
    // (isExecutorStartupConf), then spark.executor.extraJavaOptions, to which SparkContext
    // has already prepended the Java 17 module options (JavaModuleOptions: --add-opens...).
    val sparkOpts = Utils.sparkJavaOpts(conf, SparkConf.isExecutorStartupConf)
    val userOpts = conf.get(EXECUTOR_JAVA_OPTIONS).map(Utils.splitCommandString).getOrElse(Nil)
    val secrets = SecurityManager.SPARK_AUTH_SECRET_CONF +: SSLOptions.SPARK_RPC_SSL_PASSWORD_FIELDS
    val opts = (sparkOpts ++ userOpts).filterNot(o => secrets.exists(f => o.startsWith(s"-D$f"))) ++
      hostLocalReads(conf)
    // The addresses berth gave it, in Spark's format, as a standalone Worker writes them.
    val resourcesFile = if (s.custom.nonEmpty) Seq("--resourcesFile", "{{RESOURCES}}") else Nil
    java ++ Seq("-cp", cp.mkString(File.pathSeparator), s"-Xmx${s.heapMiB}m") ++ opts ++
      Seq(ExecutorMain,
        "--driver-url", driverUrl,
        "--executor-id", "{{EXECUTOR_ID}}",
        "--hostname", "{{HOSTNAME}}",
        "--cores", "{{CORES}}",
        "--app-id", "{{APP_ID}}",
        "--resourceProfileId", ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID.toString) ++
      resourcesFile
  }

  /**
   * Executors that share a host name read each other's shuffle files from disk
   * (spark.shuffle.readHostLocalDisk, default true). On berth two workers of one host may
   * run one app's executors as two identities (--run-as dynamic gives each worker its own
   * range), and such a read fails with AccessDeniedException, then the stage. The driver
   * cannot tell which hosts those are, so unless the app says otherwise executors fetch
   * from each other over the block transfer service, as on Kubernetes, where no two pods
   * share a host name. The driver's value wins where set: the executor takes its startup
   * -D only when the driver sends none (CoarseGrainedExecutorBackend.run).
   */
  def hostLocalReads(conf: SparkConf): Seq[String] =
    if (conf.contains(HostLocalDiskReads)) Nil else Seq(s"-D$HostLocalDiskReads=false")

  val HostLocalDiskReads = "spark.shuffle.readHostLocalDisk"

  /**
   * What ExecutorRunner gives an executor on top of sc.executorEnvs. The worker fills in the
   * placeholders of the values for each executor: its log links (logBase: a master's UI
   * log page) and its local directories.
   */
  def environment(sc: SparkContext, logBase: String): Map[String, String] = {
    val conf = sc.conf
    val security = sc.env.securityManager
    val libraryPath = conf.get(EXECUTOR_LIBRARY_PATH).map { p =>
      val name = Utils.libraryPathEnvName
      name -> (p +: sc.executorEnvs.get(name).toSeq).mkString(File.pathSeparator)
    }
    // The auth secret and the RPC SSL passwords go by environment, never argv (as
    // CommandUtils does); berth shows an app's env to its owner and operators only.
    val secrets = (if (security.isAuthenticationEnabled()) {
      Map(SecurityManager.ENV_AUTH_SECRET -> security.getSecretKey())
    } else Map.empty[String, String]) ++ security.getEnvironmentForSslRpcPasswords
    val python = conf.get(PYSPARK_PYTHON).orElse(sys.env.get("PYSPARK_PYTHON"))
      .map("PYSPARK_PYTHON" -> _)
    sc.executorEnvs.toMap ++ Map(
      "SPARK_HOME" -> sparkHome(sc),
      "SPARK_EXECUTOR_DIRS" -> LocalDirs,
      "SPARK_LAUNCH_WITH_SCALA" -> "0") ++ logUrls(logBase) ++ python ++ libraryPath ++ secrets
  }

  /** Spark's UI links each executor's logs: SPARK_LOG_URL_STDOUT and _STDERR. */
  def logUrls(base: String): Map[String, String] = Seq("stdout", "stderr").map { stream =>
    s"SPARK_LOG_URL_${stream.toUpperCase(java.util.Locale.ROOT)}" ->
      s"$base/ui/logs?app={{APP_ID}}&executor={{EXECUTOR_ID}}&stream=$stream"
  }.toMap

  def sparkHome(sc: SparkContext): String =
    sc.conf.get(BerthConf.SPARK_HOME).orElse(sc.getSparkHome()).getOrElse {
      throw new SparkException(s"berth: where do the workers find Spark? Set " +
        s"${BerthConf.SPARK_HOME.key} (or SPARK_HOME for the driver, which it defaults to)")
    }
}
