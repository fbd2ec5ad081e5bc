/*
 * berth's Spark cluster manager: TLS to the masters.
 */
package org.apache.spark.scheduler.cluster.berth

import java.io.{File, FileInputStream}
import java.net.Socket
import java.security.KeyStore
import java.security.cert.{CertificateException, CertificateFactory, X509Certificate}
import javax.naming.ldap.LdapName
import javax.net.ssl.{SSLContext, SSLEngine, TrustManagerFactory, X509ExtendedTrustManager}

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkException

/**
 * An SSLContext that trusts the cluster's CA alone and talks only to masters: as berth's
 * client.MasterTLS, the server's certificate must carry the role "berth:master" in its
 * subject's OU, so that a worker's address given by mistake (or a process that took a
 * master's) cannot receive the driver's credential. The host name is checked by the JDK
 * (the certificate's --host list must hold the address of the master URL). The driver
 * presents no certificate: it proves itself with its bearer token.
 */
private[berth] object BerthTls {
  private val RolePrefix = "berth:"

  def masterContext(caFile: String): SSLContext = {
    val file = new File(caFile)
    if (!file.canRead) {
      throw new SparkException(s"berth: ${BerthConf.TLS_CA_FILE.key} $caFile: cannot read it")
    }
    val certs = {
      val in = new FileInputStream(file)
      try CertificateFactory.getInstance("X.509").generateCertificates(in).asScala.toSeq
      finally in.close()
    }
    if (certs.isEmpty) {
      throw new SparkException(s"berth: ${BerthConf.TLS_CA_FILE.key} $caFile holds no PEM " +
        "certificate")
    }
    val store = KeyStore.getInstance(KeyStore.getDefaultType)
    store.load(null, null)
    certs.zipWithIndex.foreach { case (c, i) => store.setCertificateEntry(s"berth-ca-$i", c) }
    val tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm)
    tmf.init(store)
    val ca = tmf.getTrustManagers.collectFirst { case t: X509ExtendedTrustManager => t }.get
    val ctx = SSLContext.getInstance("TLS")
    ctx.init(null, Array(new MastersOnly(ca)), null)
    ctx
  }

  /** The berth roles in a certificate's subject ("master", "worker", "cli"). */
  def roles(cert: X509Certificate): Seq[String] =
    new LdapName(cert.getSubjectX500Principal.getName).getRdns.asScala.toSeq
      .filter(_.getType.equalsIgnoreCase("OU"))
      .map(_.getValue.toString)
      .filter(_.startsWith(RolePrefix))
      .map(_.stripPrefix(RolePrefix))

  /** The CA's checks (chain, validity, host name), then the master role. */
  private class MastersOnly(ca: X509ExtendedTrustManager) extends X509ExtendedTrustManager {
    private def master(chain: Array[X509Certificate]): Unit = {
      val r = roles(chain(0))
      if (r != Seq("master")) {
        throw new CertificateException(s"the server's certificate " +
          s"'${chain(0).getSubjectX500Principal.getName}' is not a berth master's " +
          s"(roles: ${if (r.isEmpty) "none" else r.mkString(",")})")
      }
    }
    override def checkServerTrusted(c: Array[X509Certificate], a: String, s: Socket): Unit = {
      ca.checkServerTrusted(c, a, s)
      master(c)
    }
    override def checkServerTrusted(c: Array[X509Certificate], a: String, e: SSLEngine): Unit = {
      ca.checkServerTrusted(c, a, e)
      master(c)
    }
    override def checkServerTrusted(c: Array[X509Certificate], a: String): Unit = {
      ca.checkServerTrusted(c, a)
      master(c)
    }
    // The driver is never a TLS server to berth.
    override def checkClientTrusted(c: Array[X509Certificate], a: String, s: Socket): Unit =
      throw new CertificateException("not a server")
    override def checkClientTrusted(c: Array[X509Certificate], a: String, e: SSLEngine): Unit =
      throw new CertificateException("not a server")
    override def checkClientTrusted(c: Array[X509Certificate], a: String): Unit =
      throw new CertificateException("not a server")
    override def getAcceptedIssuers: Array[X509Certificate] = ca.getAcceptedIssuers
  }
}
