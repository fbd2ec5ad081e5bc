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
 * (CommandUtils, WorkerCommandBuilder): a worker runs argv directly, with no shell and no
 * spark-class, so the java command line is written out here in full.
 */
private[berth] object BerthAppDescription {
  val ExecutorMain = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

  /** Where executors keep blocks and shuffle files: below their berth home (their cwd). */
  val LocalDir = "spark-local"

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
      pluginJar: Option[String]): ObjectNode = {
    val conf = sc.conf
    val s = shape(sc)
    val json = BerthClient.Json.createObjectNode()
    json.put("name", sc.appName)
    val argv = json.putArray("command")
    command(conf, sc, driverUrl, s, pluginJar).foreach(argv.add)
    val env = json.putObject("env")
    environment(sc).toSeq.sorted.foreach { case (k, v) => env.put(k, v) }
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

  /** The executor's argv: java, its class path, heap, options, then the backend's args. */
  def command(
      conf: SparkConf,
      sc: SparkContext,
      driverUrl: String,
      s: Shape,
      pluginJar: Option[String]): Seq[String] = {
    val home = sparkHome(sc)
    val java = conf.get(BerthConf.EXECUTOR_JAVA)
      .orElse(sc.executorEnvs.get("JAVA_HOME").map(h => s"$h/bin/java"))
      .getOrElse("java") // the worker looks it up in the PATH it gives its children
    val userCp = conf.get(EXECUTOR_CLASS_PATH).toSeq.flatMap(_.split(File.pathSeparator))
    // The discovery plugin must be on the executor's own class path: it runs before the
    // executor fetches the app's jars.
    val discovery = if (s.custom.nonEmpty) pluginJar.toSeq else Nil
    val cp = (userCp ++ Seq(s"$home/conf", s"$home/jars/*") ++ discovery).distinct
    // Spark's own: spark.auth*, spark.rpc*, spark.network*, spark.ssl* but passwords, ports
    // (isExecutorStartupConf), then spark.executor.extraJavaOptions, to which SparkContext
    // has already prepended the Java 17 module options (JavaModuleOptions: --add-opens...).
    val sparkOpts = Utils.sparkJavaOpts(conf, SparkConf.isExecutorStartupConf)
    val userOpts = conf.get(EXECUTOR_JAVA_OPTIONS).map(Utils.splitCommandString).getOrElse(Nil)
    val secrets = SecurityManager.SPARK_AUTH_SECRET_CONF +: SSLOptions.SPARK_RPC_SSL_PASSWORD_FIELDS
    val opts = (sparkOpts ++ userOpts).filterNot(o => secrets.exists(f => o.startsWith(s"-D$f")))
    val resourcesFile = if (s.custom.nonEmpty) Seq("--resourcesFile", "{{RESOURCES}}") else Nil
    Seq(java, "-cp", cp.mkString(File.pathSeparator), s"-Xmx${s.heapMiB}m") ++ opts ++
      Seq(ExecutorMain,
        "--driver-url", driverUrl,
        "--executor-id", "{{EXECUTOR_ID}}",
        "--hostname", "{{HOSTNAME}}",
        "--cores", "{{CORES}}",
        "--app-id", "{{APP_ID}}",
        "--resourceProfileId", ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID.toString) ++
      resourcesFile
  }

  /** What ExecutorRunner gives an executor on top of sc.executorEnvs. */
  def environment(sc: SparkContext): Map[String, String] = {
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
      "SPARK_EXECUTOR_DIRS" -> LocalDir,
      "SPARK_LAUNCH_WITH_SCALA" -> "0") ++ python ++ libraryPath ++ secrets
  }

  def sparkHome(sc: SparkContext): String =
    sc.conf.get(BerthConf.SPARK_HOME).orElse(sc.getSparkHome()).getOrElse {
      throw new SparkException(s"berth: where do the workers find Spark? Set " +
        s"${BerthConf.SPARK_HOME.key} (or SPARK_HOME for the driver, which it defaults to)")
    }
}
