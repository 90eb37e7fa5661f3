//! A remote host's facts from its Prometheus node_exporter: one bounded HTTP GET of `/metrics`,
//! parsed from the text exposition format. RAM from `node_memory_MemTotal_bytes` and
//! `node_memory_MemAvailable_bytes`, disk from `node_filesystem_avail_bytes{mountpoint}`,
//! services from `node_systemd_unit_state{name,state="active"}`, crons from the metrics
//! `fleetdash cron-run --textfile-dir` leaves for the textfile collector.

use async_trait::async_trait;

use super::{FactSource, HostFacts};
use crate::config::HostConfig;
use crate::net::ProbeClient;

pub struct NodeExporterSource {
    url: url::Url,
    client: ProbeClient,
}

impl NodeExporterSource {
    pub fn new(url: url::Url, client: ProbeClient) -> Self {
        NodeExporterSource { url, client }
    }
}

#[async_trait]
impl FactSource for NodeExporterSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let _ = (&self.url, &self.client, host);
        todo!("node_exporter facts")
    }
}
