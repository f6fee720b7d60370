//! The runner's `scroll_to_find`: the custom action the navigator's tool of that name
//! emits, done within one step (`device::scroll_find` holds the loop). The core
//! registers it on every runner, so an agent that offers the tool can rely on it.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::middleware::CustomActionHandler;
use crate::device::Device;
use crate::device::exec::{self, ExecContext};
use crate::device::scroll_find::{Found, NOT_FOUND_HINT, Next, ScrollToFind};
use crate::screen::{ReprOptions, Screen};

/// The action's name, as agents emit it.
pub const NAME: &str = "scroll_to_find";

pub struct ScrollToFindAction {
    /// The runner's coordinate transform (its swipes' points go through it).
    pub transform: std::sync::Arc<dyn crate::domain::CoordinateTransform>,
}

#[async_trait]
impl CustomActionHandler for ScrollToFindAction {
    async fn run(&self, device: &dyn Device, args: &Map<String, Value>) -> Result<Value, String> {
        let request = ScrollToFind::parse(args)?;
        let size = device.info().await.map_err(|e| e.to_string())?.screen;
        let opts = ReprOptions {
            screen: Some(size),
            ..Default::default()
        };
        let mut search = request.start();
        let found = loop {
            let xml = device.hierarchy().await.map_err(|e| e.to_string())?;
            let screen = Screen::from_xml(&xml, &opts).map_err(|e| e.to_string())?;
            let action = match search.next(&screen) {
                Next::Scroll(action) => action,
                Next::Done(found) => break found,
            };
            let ctx = ExecContext {
                screen: Some(&screen),
                size,
                transform: self.transform.as_ref(),
            };
            exec::execute(device, &action, &ctx)
                .await
                .map_err(|e| e.to_string())?;
        };
        match found {
            Found::At { swipes, bounds } => {
                Ok(json!({"found": true, "swipes": swipes, "bounds": bounds}))
            }
            other => {
                let why = other.why_not(&request.selector).unwrap_or_default();
                Err(format!("{why}. {NOT_FOUND_HINT}"))
            }
        }
    }
}
