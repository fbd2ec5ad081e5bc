/*
 * berth's Spark cluster manager: the entry point Spark finds.
 */
package org.apache.spark.scheduler.cluster.berth

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{ExternalClusterManager, SchedulerBackend, TaskScheduler,
  TaskSchedulerImpl}

/**
 * Found by SparkContext through ServiceLoader (META-INF/services) for a master URL that none
 * of Spark's own patterns matches: spark+berth://HOST:PORT[,HOST:PORT...], berth's masters'
 * API addresses. spark-submit takes such a URL for standalone's (it starts with "spark"),
 * which is why the scheme is spark+berth and not berth.
 */
private[spark] class BerthClusterManager extends ExternalClusterManager {

  override def canCreate(masterURL: String): Boolean = masterURL.startsWith(BerthConf.MasterPrefix)

  override def createTaskScheduler(sc: SparkContext, masterURL: String): TaskScheduler =
    new TaskSchedulerImpl(sc) // spark.task.maxFailures applies, as on any cluster

  override def createSchedulerBackend(
      sc: SparkContext,
      masterURL: String,
      scheduler: TaskScheduler): SchedulerBackend =
    new BerthSchedulerBackend(scheduler.asInstanceOf[TaskSchedulerImpl], sc, masterURL)

  override def initialize(scheduler: TaskScheduler, backend: SchedulerBackend): Unit =
    scheduler.asInstanceOf[TaskSchedulerImpl].initialize(backend)
}
