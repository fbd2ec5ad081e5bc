package org.apache.spark.scheduler.cluster.berth

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.SparkException

class BerthConfSuite {
  @Test def masterUrlsTakeHostsPortsAndTls(): Unit = {
    assertEquals(Seq("http://10.0.0.1:7077", "http://m2:17077"),
      BerthConf.masterUrls("spark+berth://10.0.0.1,m2:17077/", tls = false))
    assertEquals(Seq("https://[::1]:7078"),
      BerthConf.masterUrls("spark+berth://[::1]:7078", tls = true))
    assertEquals(Seq("http://a:1"), BerthConf.masterUrls("spark+berth://a:1,a:1", tls = false))
  }

  @Test def badMasterUrlsNameWhatIsWrong(): Unit = {
    val urls = Seq("spark+berth://", "spark+berth://a:1/path", "spark+berth://u@a:1", "spark://a:1")
    for (bad <- urls) {
      val e = assertThrows(classOf[SparkException], () => BerthConf.masterUrls(bad, tls = false))
      assertTrue(e.getMessage, e.getMessage.contains("berth"))
    }
  }

  @Test def constraintsSplitAsBerthRunDoes(): Unit = {
    import BerthConf.Constraint
    assertEquals(
      Seq(Constraint("gpu-model", Seq("T4", "P100"), Nil), Constraint("zone", Nil, Seq("z2"))),
      BerthConf.parseConstraints("gpu-model=T4,P100; zone!=z2;"))
    assertThrows(classOf[SparkException], () => BerthConf.parseConstraints("zone"))
    assertThrows(classOf[SparkException], () => BerthConf.parseConstraints("zone="))
  }
}
