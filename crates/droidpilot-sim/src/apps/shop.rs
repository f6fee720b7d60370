//! Shop: a third-party shopping app with everything that trips agents up. A permission
//! dialog on first open, a promo pop-up that interrupts a few seconds later, a catalogue
//! that loads after a delay and scrolls, product pages, a cart, and a checkout (a secure
//! screen, like real payment screens) that asks for confirmation before paying.

use droidpilot_core::domain::Bounds;

use super::super::state::{AppId, Cmd, Dialog, Fg, Order, PERMISSION_PACKAGE, Page, PhoneState};
use super::super::ui::{Ctx, action_slot, app_frame, scroll_list};
use super::super::widget::{ACCENT, SUBTLE, Symbol, TextSize, Widget};

const PKG: &str = "com.droidpilot.shop";
/// Virtual ms after the first open (once the permission is answered) that the promo
/// interrupts.
pub const PROMO_AFTER_MS: u64 = 2_000;
/// Virtual ms the catalogue takes to load.
pub const LOAD_MS: u64 = 600;

pub struct Product {
    pub id: u32,
    pub title: &'static str,
    pub price_cents: u64,
    pub description: &'static str,
}

const fn p(id: u32, title: &'static str, price_cents: u64, description: &'static str) -> Product {
    Product {
        id,
        title,
        price_cents,
        description,
    }
}

/// The catalogue, in display order. The cheapest USB-C cable is deliberately far down,
/// so finding it needs scrolling and comparing.
pub const PRODUCTS: &[Product] = &[
    p(
        1,
        "Wireless Earbuds",
        4999,
        "Bluetooth 5.3, 24 h battery with case.",
    ),
    p(
        2,
        "USB-C Cable 2m",
        1299,
        "Braided, 60 W charging, USB 2.0 data.",
    ),
    p(3, "Phone Case", 1999, "Shock-absorbing clear case."),
    p(4, "Screen Protector", 899, "Tempered glass, pack of 2."),
    p(5, "USB-C Cable 1m", 999, "60 W charging, USB 2.0 data."),
    p(6, "Power Bank 10000mAh", 2999, "USB-C PD 20 W in and out."),
    p(7, "Laptop Stand", 3499, "Aluminium, six heights."),
    p(8, "USB-C to Lightning Cable", 1499, "MFi certified, 1 m."),
    p(9, "Wall Charger 30W", 2499, "GaN, USB-C PD."),
    p(10, "HDMI Cable 2m", 1099, "4K at 60 Hz."),
    p(11, "Bluetooth Speaker", 3999, "Waterproof IPX7."),
    p(
        12,
        "USB-C Cable 0.5m",
        699,
        "Short cable for power banks, 60 W.",
    ),
    p(13, "Mouse Pad", 799, "Non-slip rubber base."),
    p(14, "Webcam 1080p", 4499, "Auto focus, dual microphones."),
];

pub fn product(id: u32) -> Option<&'static Product> {
    PRODUCTS.iter().find(|p| p.id == id)
}

pub fn money(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// First open asks for the notification permission.
pub fn on_open(st: &mut PhoneState, fresh: bool) {
    if fresh {
        st.shop.catalogue_at_ms = st.clock_ms;
    }
    if st.shop.notifications_allowed.is_none() && st.dialog.is_none() {
        let mut d = Dialog::alert(
            PERMISSION_PACKAGE,
            "permission",
            "Allow Shop to send you notifications?",
            "",
        )
        .button(
            "com.android.permissioncontroller:id/permission_deny_button",
            "Don't allow",
            Cmd::ShopPermission { allow: false },
        )
        .button(
            "com.android.permissioncontroller:id/permission_allow_button",
            "Allow",
            Cmd::ShopPermission { allow: true },
        );
        d.on_back = Cmd::ShopPermission { allow: false };
        st.dialog = Some(d);
    }
}

/// Timed interruption: the promo pops up once, a while after the permission dialog.
pub fn tick(st: &mut PhoneState) {
    if st.fg == Fg::App(AppId::Shop)
        && st.dialog.is_none()
        && !st.shop.promo_shown
        && st.shop.promo_due_ms.is_some_and(|t| st.clock_ms >= t)
    {
        st.shop.promo_shown = true;
        st.dialog = Some(
            Dialog::alert(
                PKG,
                "promo",
                "Flash sale! 20% off headphones",
                "Today only. Subscribe to get deals first.",
            )
            .button("promo_dismiss", "No thanks", Cmd::CloseDialog)
            .button("promo_accept", "Subscribe", Cmd::CloseDialog),
        );
    }
}

fn set_stack(st: &mut PhoneState, pages: Vec<Page>) {
    st.stacks.insert(AppId::Shop, pages);
    st.page_at_ms = st.clock_ms;
    st.focus = None;
    st.keyboard = false;
}

pub fn apply(st: &mut PhoneState, cmd: Cmd) {
    match cmd {
        Cmd::ShopPermission { allow } => {
            st.shop.notifications_allowed = Some(allow);
            st.dialog = None;
            if !st.shop.promo_shown && st.shop.promo_due_ms.is_none() {
                st.shop.promo_due_ms = Some(st.clock_ms + PROMO_AFTER_MS);
            }
        }
        Cmd::ShopAdd { id } => {
            match st.shop.cart.iter_mut().find(|(p, _)| *p == id) {
                Some((_, q)) => *q += 1,
                None => st.shop.cart.push((id, 1)),
            }
            st.toast("Added to cart");
        }
        Cmd::ShopRemove { id } => st.shop.cart.retain(|(p, _)| *p != id),
        Cmd::ShopPlaceOrder => {
            if st.shop.cart.is_empty() {
                st.toast("Your cart is empty");
                return;
            }
            let total = money(st.shop.cart_total_cents());
            st.dialog = Some(
                Dialog::alert(
                    PKG,
                    "confirm_purchase",
                    "Confirm purchase",
                    &format!("Pay {total} with Visa •••• 4242?"),
                )
                .button("android:id/button2", "Cancel", Cmd::CloseDialog)
                .button("android:id/button1", "Pay now", Cmd::ShopConfirm),
            );
        }
        Cmd::ShopConfirm => {
            let id = st.id();
            let order = Order {
                id,
                items: std::mem::take(&mut st.shop.cart),
                total_cents: 0,
            };
            let total: u64 = order
                .items
                .iter()
                .filter_map(|(p, q)| product(*p).map(|p| p.price_cents * *q as u64))
                .sum();
            st.shop.orders.push(Order {
                total_cents: total,
                ..order
            });
            set_stack(st, vec![Page::Catalogue, Page::OrderDone { id }]);
        }
        _ => {}
    }
}

fn cart_button(st: &PhoneState, cx: &Ctx) -> Widget {
    let n: u32 = st.shop.cart.iter().map(|(_, q)| q).sum();
    let mut b = Widget::image_button(
        action_slot(cx, 0),
        format!("Cart, {n} items"),
        Symbol::Cart,
        Cmd::Push { page: Page::Cart },
    )
    .id("action_cart");
    b.text = String::new();
    b
}

fn line(cx: &Ctx, top: i32, h: i32, text: &str, id: &str, size: TextSize) -> Widget {
    Widget::text_view(Bounds::new(cx.d(60), top, cx.w - cx.d(60), top + h), text)
        .id(id)
        .size(size)
}

pub fn build(st: &PhoneState, cx: &Ctx, page: Option<&Page>) -> (Widget, bool) {
    let top = cx.content_top();
    let area = Bounds::new(0, top, cx.w, cx.h);
    match page {
        Some(Page::Product { id }) => {
            let Some(p) = product(*id) else {
                return (app_frame(cx, "Shop", true, vec![], vec![]), false);
            };
            let kids = vec![
                Widget::new(
                    "android.widget.ImageView",
                    Bounds::new(0, top, cx.w, top + cx.d(600)),
                )
                .id("product_image")
                .desc(p.title)
                .bg([232, 240, 254]),
                line(
                    cx,
                    top + cx.d(640),
                    cx.d(120),
                    p.title,
                    "product_title",
                    TextSize::Title,
                )
                .bold(),
                line(
                    cx,
                    top + cx.d(770),
                    cx.d(100),
                    &money(p.price_cents),
                    "product_price",
                    TextSize::Title,
                )
                .fg(ACCENT),
                line(
                    cx,
                    top + cx.d(890),
                    cx.d(160),
                    p.description,
                    "product_description",
                    TextSize::Normal,
                )
                .fg(SUBTLE),
                Widget::button(
                    Bounds::new(
                        cx.d(60),
                        top + cx.d(1100),
                        cx.w - cx.d(60),
                        top + cx.d(1250),
                    ),
                    "Add to cart",
                    Cmd::ShopAdd { id: p.id },
                )
                .id("add_to_cart"),
            ];
            (
                app_frame(cx, "Product", true, vec![cart_button(st, cx)], kids),
                false,
            )
        }
        Some(Page::Cart) => {
            let mut rows: Vec<Widget> = st
                .shop
                .cart
                .iter()
                .filter_map(|(id, q)| product(*id).map(|p| (p, *q)))
                .map(|(p, q)| {
                    let h = cx.d(200);
                    Widget::view_group(Bounds::new(0, 0, cx.w, h))
                        .id("cart_item")
                        .child(
                            Widget::text_view(
                                Bounds::new(cx.d(60), cx.d(20), cx.w - cx.d(300), h / 2 + cx.d(10)),
                                p.title,
                            )
                            .id("cart_item_title"),
                        )
                        .child(
                            Widget::text_view(
                                Bounds::new(
                                    cx.d(60),
                                    h / 2 + cx.d(10),
                                    cx.w - cx.d(300),
                                    h - cx.d(20),
                                ),
                                format!("Qty {q} · {}", money(p.price_cents * q as u64)),
                            )
                            .id("cart_item_price")
                            .fg(SUBTLE)
                            .size(TextSize::Small),
                        )
                        .child(
                            Widget::button(
                                Bounds::new(
                                    cx.w - cx.d(280),
                                    cx.d(40),
                                    cx.w - cx.d(40),
                                    h - cx.d(40),
                                ),
                                "Remove",
                                Cmd::ShopRemove { id: p.id },
                            )
                            .id("remove_item")
                            .bg([241, 243, 244])
                            .fg(ACCENT),
                        )
                })
                .collect();
            if rows.is_empty() {
                rows.push(
                    Widget::text_view(
                        Bounds::new(cx.d(60), 0, cx.w, cx.d(200)),
                        "Your cart is empty",
                    )
                    .id("empty_cart"),
                );
            }
            let list_area = Bounds::new(0, top, cx.w, cx.h - cx.d(360));
            let total = st.shop.cart_total_cents();
            let kids = vec![
                scroll_list(st, cx, "shop.cart", list_area, rows),
                line(
                    cx,
                    cx.h - cx.d(340),
                    cx.d(110),
                    &format!("Total {}", money(total)),
                    "cart_total",
                    TextSize::Title,
                )
                .bold(),
                Widget::button(
                    Bounds::new(cx.d(60), cx.h - cx.d(210), cx.w - cx.d(60), cx.h - cx.d(60)),
                    "Checkout",
                    Cmd::Push {
                        page: Page::Checkout,
                    },
                )
                .id("checkout_button"),
            ];
            (app_frame(cx, "Cart", true, vec![], kids), false)
        }
        Some(Page::Checkout) => {
            let total = st.shop.cart_total_cents();
            let kids = vec![
                line(
                    cx,
                    top + cx.d(40),
                    cx.d(100),
                    "Pay with",
                    "",
                    TextSize::Small,
                )
                .fg(SUBTLE),
                line(
                    cx,
                    top + cx.d(140),
                    cx.d(120),
                    "Visa •••• 4242",
                    "payment_method",
                    TextSize::Normal,
                ),
                line(
                    cx,
                    top + cx.d(280),
                    cx.d(100),
                    "Ship to",
                    "",
                    TextSize::Small,
                )
                .fg(SUBTLE),
                line(
                    cx,
                    top + cx.d(380),
                    cx.d(120),
                    "1 Test Street, Springfield",
                    "shipping_address",
                    TextSize::Normal,
                ),
                line(
                    cx,
                    top + cx.d(560),
                    cx.d(120),
                    &format!("Order total {}", money(total)),
                    "order_total",
                    TextSize::Title,
                )
                .bold(),
                Widget::button(
                    Bounds::new(cx.d(60), top + cx.d(760), cx.w - cx.d(60), top + cx.d(910)),
                    "Place order",
                    Cmd::ShopPlaceOrder,
                )
                .id("place_order"),
            ];
            (app_frame(cx, "Checkout", true, vec![], kids), true)
        }
        Some(Page::OrderDone { id }) => {
            let kids = vec![
                line(
                    cx,
                    top + cx.d(200),
                    cx.d(140),
                    "Thank you!",
                    "confirmation_title",
                    TextSize::Title,
                )
                .bold(),
                line(
                    cx,
                    top + cx.d(360),
                    cx.d(120),
                    &format!("Order #{id} confirmed"),
                    "order_number",
                    TextSize::Normal,
                ),
                Widget::button(
                    Bounds::new(cx.d(60), top + cx.d(560), cx.w - cx.d(60), top + cx.d(710)),
                    "Continue shopping",
                    Cmd::Back,
                )
                .id("continue_shopping"),
            ];
            (app_frame(cx, "Order placed", false, vec![], kids), false)
        }
        _ => {
            let mut kids = Vec::new();
            if st.clock_ms < st.shop.catalogue_at_ms + LOAD_MS + cx.extra_delay_ms {
                kids.push(
                    Widget::new(
                        "android.widget.ProgressBar",
                        Bounds::new(
                            cx.w / 2 - cx.d(80),
                            top + cx.d(300),
                            cx.w / 2 + cx.d(80),
                            top + cx.d(460),
                        ),
                    )
                    .id("loading")
                    .look(super::super::widget::Look::Progress)
                    .bg(ACCENT),
                );
            } else {
                let rows: Vec<Widget> = PRODUCTS
                    .iter()
                    .map(|p| {
                        let h = cx.d(220);
                        Widget::view_group(Bounds::new(0, 0, cx.w, h))
                            .id("product_card")
                            .tap(Cmd::Push {
                                page: Page::Product { id: p.id },
                            })
                            .child(
                                Widget::new(
                                    "android.widget.ImageView",
                                    Bounds::new(cx.d(40), cx.d(20), cx.d(220), h - cx.d(20)),
                                )
                                .id("product_thumb")
                                .bg([232, 240, 254]),
                            )
                            .child(
                                Widget::text_view(
                                    Bounds::new(
                                        cx.d(260),
                                        cx.d(20),
                                        cx.w - cx.d(40),
                                        h / 2 + cx.d(10),
                                    ),
                                    p.title,
                                )
                                .id("product_title"),
                            )
                            .child(
                                Widget::text_view(
                                    Bounds::new(
                                        cx.d(260),
                                        h / 2 + cx.d(10),
                                        cx.w - cx.d(40),
                                        h - cx.d(20),
                                    ),
                                    money(p.price_cents),
                                )
                                .id("product_price")
                                .fg(ACCENT)
                                .bold(),
                            )
                    })
                    .collect();
                kids.push(scroll_list(st, cx, "shop.catalogue", area, rows));
            }
            (
                app_frame(cx, "Shop", false, vec![cart_button(st, cx)], kids),
                false,
            )
        }
    }
}
