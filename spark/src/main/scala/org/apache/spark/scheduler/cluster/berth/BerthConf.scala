/*
 * berth's Spark cluster manager: its settings.
 */
package org.apache.spark.scheduler.cluster.berth

import java.util.concurrent.TimeUnit

import org.apache.spark.{SparkConf, SparkException}
import org.apache.spark.internal.config.ConfigBuilder

/**
 * The spark.berth.* settings. Those that berth's own CLI also takes from the
 * environment fall back to the same variable, so a driver started by
 * `berth submit` (which gets BERTH_TOKEN and BERTH_TLS_CA_FILE from its
 * worker) needs no setting at all.
 */
private[berth] object BerthConf {
  val MasterPrefix = "spark+berth://"

  val QUEUE = ConfigBuilder("spark.berth.queue")
    .doc("The berth queue the app runs in (else BERTH_RUN_QUEUE, else the default queue).")
    .version("4.2.0").stringConf.createOptional

  val PRIORITY = ConfigBuilder("spark.berth.priority")
    .doc("The app's order within its queue, higher first (else BERTH_RUN_PRIORITY).")
    .version("4.2.0").intConf.createOptional

  val TOKEN = ConfigBuilder("spark.berth.token")
    .doc("A tenant's token, sent as Authorization: Bearer (else BERTH_TOKEN). Removed from " +
      "the conf once read, so that executors never receive it.")
    .version("4.2.0").stringConf.createOptional

  val SECRET_FILE = ConfigBuilder("spark.berth.secretFile")
    .doc("A file holding the operator secret (else BERTH_SECRET_FILE); never with a token.")
    .version("4.2.0").stringConf.createOptional

  val TLS_CA_FILE = ConfigBuilder("spark.berth.tls.caFile")
    .doc("The cluster's CA certificate (else BERTH_TLS_CA_FILE): with it the masters are " +
      "called over https and must present a master certificate of that CA.")
    .version("4.2.0").stringConf.createOptional

  val CONSTRAINTS = ConfigBuilder("spark.berth.constraints")
    .doc("Where executors may run, as `berth run --constraint`, several separated by ';': " +
      "gpu-model=T4,P100;zone!=z2 (else BERTH_RUN_CONSTRAINT).")
    .version("4.2.0").stringConf.createOptional

  val SPARK_HOME = ConfigBuilder("spark.berth.sparkHome")
    .doc("Where the workers find Spark (its jars/ and conf/); default: the driver's SPARK_HOME.")
    .version("4.2.0").stringConf.createOptional

  val EXECUTOR_JAVA = ConfigBuilder("spark.berth.executor.java")
    .doc("The java the workers run executors with (a path on every worker); default: " +
      "$JAVA_HOME/bin/java with spark.executorEnv.JAVA_HOME, else with the worker's own " +
      "JAVA_HOME, else `java` from the PATH the worker gives its children.")
    .version("4.2.0").stringConf.createOptional

  val STOP_AFTER_DISCONNECT = ConfigBuilder("spark.berth.stopAfterDisconnect")
    .doc("Stop the executors on a worker out of touch with every master this long, so that " +
      "none runs on beside its replacement (berth's stopAfterDisconnect); default: never.")
    .version("4.2.0").timeConf(TimeUnit.SECONDS).createOptional

  val CONNECT_TIMEOUT = ConfigBuilder("spark.berth.connectTimeout")
    .doc("How long the driver tries to reach a master at start before it fails.")
    .version("4.2.0").timeConf(TimeUnit.MILLISECONDS).createWithDefaultString("10s")

  val STATUS_INTERVAL = ConfigBuilder("spark.berth.statusInterval")
    .doc("How often the driver reads the app's status to report why it waits for executors.")
    .version("4.2.0").timeConf(TimeUnit.MILLISECONDS).createWithDefaultString("5s")

  /** A setting, else the environment variable berth's CLI reads for it. */
  def orEnv(conf: SparkConf, key: String, envVar: String): Option[String] =
    conf.getOption(key).orElse(sys.env.get(envVar)).map(_.trim).filter(_.nonEmpty)

  /**
   * The masters' base URLs of spark+berth://h1:p1,h2:p2: https when the cluster's CA is
   * given (berth's CLI makes the same guess for a bare host:port), else http.
   */
  def masterUrls(master: String, tls: Boolean): Seq[String] = {
    if (!master.startsWith(MasterPrefix)) {
      throw new SparkException(s"berth: master URL '$master' does not start with $MasterPrefix")
    }
    val scheme = if (tls) "https" else "http"
    val hosts = master.stripPrefix(MasterPrefix).stripSuffix("/").split(",").map(_.trim)
      .filter(_.nonEmpty).toSeq
    if (hosts.isEmpty) {
      throw new SparkException(s"berth: master URL '$master' names no master " +
        s"(want ${MasterPrefix}HOST:PORT[,HOST:PORT...])")
    }
    hosts.distinct.map { hp =>
      val uri = try new java.net.URI(s"$scheme://$hp") catch {
        case e: java.net.URISyntaxException =>
          throw new SparkException(s"berth: master '$hp' of '$master': ${e.getMessage}")
      }
      if (uri.getHost == null || uri.getRawPath.nonEmpty || uri.getRawQuery != null ||
          uri.getRawUserInfo != null) {
        throw new SparkException(s"berth: master '$hp' of '$master' is not HOST[:PORT]")
      }
      val port = if (uri.getPort < 0) 7077 else uri.getPort
      s"$scheme://${uri.getHost}:$port"
    }
  }

  /**
   * Constraints as `berth run --constraint` writes them, ';' between two: LABEL=V1,V2 (one
   * of the values) or LABEL!=V1,V2 (none of them). The master checks labels and values and
   * answers a 400 naming what is wrong; this only splits.
   */
  def parseConstraints(spec: String): Seq[Constraint] =
    spec.split(";").map(_.trim).filter(_.nonEmpty).toSeq.map { c =>
      val eq = c.indexOf('=')
      if (eq <= 0 || eq == c.length - 1) {
        throw new SparkException(s"berth: constraint '$c' of ${CONSTRAINTS.key}: want " +
          "LABEL=V1,V2 or LABEL!=V1,V2, several separated by ';'")
      }
      val (key, values) = (c.substring(0, eq), c.substring(eq + 1).split(",").map(_.trim).toSeq)
      if (key.endsWith("!")) Constraint(key.dropRight(1).trim, Nil, values)
      else Constraint(key.trim, values, Nil)
    }

  case class Constraint(label: String, in: Seq[String], notIn: Seq[String])
}
