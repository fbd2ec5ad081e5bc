package org.apache.spark.scheduler.cluster.berth

import java.net.{InetSocketAddress, ServerSocket}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{ConcurrentLinkedQueue, Executors}

import scala.jdk.CollectionConverters._

import com.sun.net.httpserver.{HttpExchange, HttpServer}
import org.junit.{After, Test}
import org.junit.Assert._

import org.apache.spark.SparkException

/** The client against fake masters on loopback: leaders, elections, refusals. */
class BerthClientSuite {
  private val pool = Executors.newCachedThreadPool()
  private val servers = new ConcurrentLinkedQueue[HttpServer]()
  private val seen = new ConcurrentLinkedQueue[String]() // "base auth method path"

  @After def stop(): Unit = {
    servers.asScala.foreach(_.stop(0))
    pool.shutdownNow()
  }

  /** A fake master answering every request with answer(its base URL, path). */
  private def master(answer: (String, String) => (Int, String)): String = {
    val s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
    val base = s"http://127.0.0.1:${s.getAddress.getPort}"
    s.createContext("/", (x: HttpExchange) => {
      seen.add(s"$base ${x.getRequestHeaders.getFirst("Authorization")} ${x.getRequestMethod} " +
        x.getRequestURI.getPath)
      val (status, body) = answer(base, x.getRequestURI.getPath)
      val bytes = body.getBytes(UTF_8)
      x.sendResponseHeaders(status, if (bytes.isEmpty) -1 else bytes.length)
      if (bytes.nonEmpty) x.getResponseBody.write(bytes)
      x.close()
    })
    s.start()
    servers.add(s)
    base
  }

  private def client(masters: Seq[String], waitMs: Long = 10000) =
    new BerthClient(masters, Some("bt.acme.secret"), None, pool, requestTimeoutMs = 2000,
      waitForMasterMs = waitMs)

  @Test def followsTheLeaderAndKeepsTheCredential(): Unit = {
    val leader = master((_, _) => (200, """{"id":"app-1"}"""))
    val follower = master((_, _) =>
      (307, s"""{"error":"not the leader","code":"not_leader","leader":"$leader"}"""))
    val c = client(Seq(follower, leader))
    val body = Some(BerthClient.Json.createObjectNode())
    assertEquals("app-1", c.call("POST", "/v1/apps", body).path("id").asText())
    assertEquals(Seq(s"$follower Bearer bt.acme.secret POST /v1/apps",
      s"$leader Bearer bt.acme.secret POST /v1/apps"), seen.asScala.toSeq)
    assertEquals(leader, c.leaderOrFirst) // remembered: the next call goes there at once
  }

  @Test def anElectionSendsTheCallToTheNextMaster(): Unit = {
    val busy = master((_, _) => (503, """{"error":"no leader","code":"no_leader"}"""))
    val leader = master((_, _) => (200, "{}"))
    client(Seq(busy, leader)).call("PUT", "/v1/apps/a/executor-limit")
    assertEquals(2, seen.size)
  }

  @Test def aRefusalIsFinalAndSaysWhy(): Unit = {
    val m = master((_, p) =>
      if (p == "/v1/apps") (400, """{"error":"queue: no queue \"nope\"","code":"unknown_queue"}""")
      else (401, """{"error":"tenant token unknown","code":"unauthorized"}"""))
    val c = client(Seq(m))
    val e = assertThrows(classOf[BerthApiException], () => c.call("POST", "/v1/apps"))
    assertEquals("unknown_queue", e.code)
    assertTrue(e.getMessage, e.getMessage.contains("no queue \"nope\""))
    val u = assertThrows(classOf[BerthApiException], () => c.call("GET", "/v1/apps/a"))
    assertTrue(u.getMessage, u.getMessage.contains("refused the credential"))
    assertEquals(2, seen.size) // neither was repeated
  }

  @Test def noMasterListeningFailsWithinItsPatience(): Unit = {
    val free = Seq.fill(2) { // ports nothing listens on once closed
      val s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress)
      try s.getLocalPort finally s.close()
    }
    val c = client(free.map(p => s"http://127.0.0.1:$p"), waitMs = 500)
    val start = System.nanoTime()
    val e = assertThrows(classOf[SparkException], () => c.call("GET", "/v1/apps/a"))
    assertTrue(e.getMessage, e.getMessage.contains("no master answers"))
    assertTrue((System.nanoTime() - start) / 1000000 < 5000)
  }
}
