//! Virtual phone costs per screen: building the widget tree and rendering RGBA pixels
//! (what a screenshot costs before PNG encoding), and generating the hierarchy XML.

use criterion::{Criterion, criterion_group, criterion_main};
use droidpilot::device::sim::{AppId, Cmd, Page, SimConfig, SimDevice};

/// (name, how to get there)
fn screens() -> Vec<(&'static str, SimDevice)> {
    let mk = |f: &dyn Fn(&SimDevice)| {
        let d = SimDevice::new(SimConfig::default()).expect("default config is valid");
        f(&d);
        d.advance_clock(5_000);
        d
    };
    let shop = |d: &SimDevice| {
        let mut s = d.state();
        s.shop.notifications_allowed = Some(true);
        s.shop.promo_shown = true;
        d.set_state(s);
        d.apply(Cmd::Launch { app: AppId::Shop });
    };
    vec![
        ("launcher", mk(&|_| {})),
        (
            "settings",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Settings,
                })
            }),
        ),
        (
            "contacts",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Contacts,
                })
            }),
        ),
        (
            "contact_edit_keyboard",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Contacts,
                });
                d.apply(Cmd::ContactNew);
                d.apply(Cmd::Focus {
                    field: "contact.name".into(),
                });
            }),
        ),
        ("clock", mk(&|d| d.apply(Cmd::Launch { app: AppId::Clock }))),
        (
            "messages_thread",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Messages,
                });
                d.apply(Cmd::OpenThread {
                    contact: "Alice Martin".into(),
                });
            }),
        ),
        ("notes", mk(&|d| d.apply(Cmd::Launch { app: AppId::Notes }))),
        (
            "browser_results",
            mk(&|d| {
                d.apply(Cmd::Launch {
                    app: AppId::Browser,
                });
                d.apply(Cmd::BrowserOpen {
                    url: "https://www.google.com/search?q=rust".into(),
                });
            }),
        ),
        ("shop_catalogue", mk(&shop)),
        (
            "shop_dialog",
            mk(&|d| d.apply(Cmd::Launch { app: AppId::Shop })),
        ),
        (
            "shop_cart",
            mk(&|d| {
                shop(d);
                d.apply(Cmd::ShopAdd { id: 1 });
                d.apply(Cmd::Push { page: Page::Cart });
            }),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let screens = screens();
    let mut g = c.benchmark_group("sim_render");
    for (name, d) in &screens {
        g.bench_function(*name, |b| b.iter(|| d.render_now()));
    }
    g.finish();
    let mut g = c.benchmark_group("sim_hierarchy");
    for (name, d) in &screens {
        g.bench_function(*name, |b| b.iter(|| d.hierarchy_now()));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
