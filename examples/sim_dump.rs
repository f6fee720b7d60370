use droidpilot::device::Device;
use droidpilot::device::sim::*;
use droidpilot::domain::AppRef;
#[tokio::main]
async fn main() {
    let d = SimDevice::new(SimConfig::default()).unwrap();
    let args: Vec<String> = std::env::args().collect();
    let app = args.get(1).cloned().unwrap_or("home".into());
    if app != "home" {
        d.launch_app(&AppRef::Label(app.clone())).await.unwrap();
    }
    d.advance_clock(3000);
    let s = d.screenshot().await.unwrap();
    std::fs::write(format!("/tmp/sim_{app}.png"), s.png().unwrap()).unwrap();
    std::fs::write(format!("/tmp/sim_{app}.xml"), d.hierarchy().await.unwrap()).unwrap();
}
