/*
 * berth's Spark cluster manager: how the driver proves itself to the masters.
 */
package org.apache.spark.scheduler.cluster.berth

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.util.concurrent.ExecutorService

import org.apache.spark.{SparkConf, SparkException}

/**
 * The driver's credential and TLS, read as berth's CLI reads its own: a tenant's token
 * (spark.berth.token, else BERTH_TOKEN, which a driver started by `berth submit` has as its
 * own credential), or the operator secret (spark.berth.secretFile, else BERTH_SECRET_FILE,
 * else BERTH_SECRET), never both: the master takes one bearer. With the cluster's CA the
 * masters are called over https. Nothing is needed on a loopback cluster without a secret.
 */
private[berth] object BerthCredentials {
  def client(conf: SparkConf, masterUrl: String, pool: ExecutorService): BerthClient = {
    val token = BerthConf.orEnv(conf, BerthConf.TOKEN.key, "BERTH_TOKEN")
    // Executors are sent every spark.* setting when they register: not this one.
    conf.remove(BerthConf.TOKEN.key)
    val secret = BerthConf.orEnv(conf, BerthConf.SECRET_FILE.key, "BERTH_SECRET_FILE")
      .map(readSecret).orElse(sys.env.get("BERTH_SECRET").map(_.trim).filter(_.nonEmpty))
    if (token.nonEmpty && secret.nonEmpty) {
      throw new SparkException(s"berth: a token (${BerthConf.TOKEN.key} or BERTH_TOKEN) and " +
        s"the operator secret (${BerthConf.SECRET_FILE.key}, BERTH_SECRET_FILE or " +
        "BERTH_SECRET): give one, the master takes only one of them")
    }
    val ca = BerthConf.orEnv(conf, BerthConf.TLS_CA_FILE.key, "BERTH_TLS_CA_FILE")
    val masters = BerthConf.masterUrls(masterUrl, tls = ca.nonEmpty)
    new BerthClient(masters, token.orElse(secret), ca.map(BerthTls.masterContext), pool,
      waitForMasterMs = conf.get(BerthConf.CONNECT_TIMEOUT))
  }

  /** The secret file's first line, as berth's credentials.ReadSecretFile reads it. */
  private def readSecret(path: String): String = {
    val text = try new String(Files.readAllBytes(Paths.get(path)), UTF_8) catch {
      case e: java.io.IOException =>
        throw new SparkException(s"berth: ${BerthConf.SECRET_FILE.key} $path: ${e.getMessage}", e)
    }
    val secret = text.linesIterator.nextOption().getOrElse("").trim
    if (secret.isEmpty) throw new SparkException(s"berth: secret file $path is empty")
    secret
  }
}
