/*
 * berth's Spark cluster manager: an executor's custom resources.
 */
package org.apache.spark.scheduler.cluster.berth

import java.util.Optional

import org.apache.spark.SparkConf
import org.apache.spark.api.resource.ResourceDiscoveryPlugin
import org.apache.spark.resource.{ResourceInformation, ResourceRequest}

/**
 * Tells an executor the addresses berth gave it: BERTH_RESOURCE_GPU=0,1 for "gpu". berth's
 * resources file ({{RESOURCES}}) is in Spark's format but names its component
 * "berth.executor", which Spark's executor filters out (it keeps "spark.executor"), so the
 * backend sets spark.resources.discoveryPlugin to this class instead (NOTES.md, "API needs").
 * Runs on executors only; elsewhere the variable is unset and Spark asks the next plugin.
 */
class BerthResourceDiscovery extends ResourceDiscoveryPlugin {
  override def discoverResource(
      request: ResourceRequest,
      sparkConf: SparkConf): Optional[ResourceInformation] = {
    val name = request.id.resourceName
    sys.env.get("BERTH_RESOURCE_" + name.toUpperCase(java.util.Locale.ROOT)) match {
      case Some(list) if list.trim.nonEmpty =>
        Optional.of(new ResourceInformation(name, list.split(",").map(_.trim).filter(_.nonEmpty)))
      case _ => Optional.empty()
    }
  }
}
